//! A word-exact model of the device's Montgomery multiplication and squaring (`cuda/mont.cuh`:
//! `mul_words_unreduced`, `square_words` and `redc_words`, instruction by instruction with PTX's
//! carry flag), to check the bounds its unreduced operands rely on where random GPU tests rarely
//! reach: every carry a chain drops must be zero and the result below 2 p. Fp's two spare bits
//! let both operands of a multiplication lie below 2 p (`mont_t::TWO_SPARE`); with Fr's one, an
//! unreduced first operand loses a carry, which the model shows too.

/// A run of PTX carry-chain instructions: `cc` is the carry flag. A dropped carry (one that the
/// device's chain does not propagate) is an error naming where.
struct Chain {
    cc: u64,
}

type Dropped = &'static str;

impl Chain {
    /// `d = x + y + cc_in`, the flag set to its carry (`add.cc`, `addc.cc`, `mad*.cc`).
    fn add(&mut self, d: &mut u32, x: u64, y: u64, carry_in: bool) {
        let s = x + y + if carry_in { self.cc } else { 0 };
        *d = s as u32;
        self.cc = s >> 32;
    }
    /// `d = x + y + cc` without setting the flag (`addc`, `madc.hi`): its carry must be zero.
    fn add_last(&mut self, d: &mut u32, x: u64, y: u64, at: Dropped) -> Result<(), Dropped> {
        let s = x + y + self.cc;
        *d = s as u32;
        if s >> 32 != 0 {
            return Err(at);
        }
        Ok(())
    }
}

fn lo(a: u32, b: u32) -> u64 {
    (a as u64 * b as u64) & 0xffff_ffff
}
fn hi(a: u32, b: u32) -> u64 {
    (a as u64 * b as u64) >> 32
}

/// A field as the device sees it: its modulus words and -modulus^-1 mod 2^32.
struct Field<const N: usize> {
    p: [u32; N],
    m0: u32,
}

impl<const N: usize> Field<N> {
    fn new(p: [u32; N]) -> Self {
        // -p^-1 mod 2^32 by Newton's iteration
        let mut inv: u32 = 1;
        for _ in 0..5 {
            inv = inv.wrapping_mul(2u32.wrapping_sub(p[0].wrapping_mul(inv)));
        }
        Field {
            p,
            m0: inv.wrapping_neg(),
        }
    }

    /// acc += x[even j] * bi over one chain (`cmad_n`); the flag keeps its carry out.
    fn cmad(c: &mut Chain, acc: &mut [u32; N], x: &[u32], bi: u32) {
        let mut j = 0;
        while j < N {
            let xj = if j < x.len() { x[j] } else { 0 };
            let (a0, a1) = (acc[j] as u64, acc[j + 1] as u64);
            c.add(&mut acc[j], a0, lo(xj, bi), j > 0);
            c.add(&mut acc[j + 1], a1, hi(xj, bi), true);
            j += 2;
        }
    }

    /// One multiplier word, then one reduction word (`mad_n_redc`).
    fn mad_n_redc(
        &self,
        even: &mut [u32; N],
        odd: &mut [u32; N],
        a: &[u32; N],
        bi: u32,
        first: bool,
    ) -> Result<(), Dropped> {
        let mut c = Chain { cc: 0 };
        if first {
            for j in (0..N).step_by(2) {
                odd[j] = lo(a[j + 1], bi) as u32;
                odd[j + 1] = hi(a[j + 1], bi) as u32;
                even[j] = lo(a[j], bi) as u32;
                even[j + 1] = hi(a[j], bi) as u32;
            }
        } else {
            let e0 = even[0] as u64;
            c.add(&mut even[0], e0, odd[1] as u64, false);
            // odd = (odd >> 64) + a[odd j] * bi + carry (`madc_n_rshift`)
            for j in (0..N - 2).step_by(2) {
                let (o2, o3) = (odd[j + 2] as u64, odd[j + 3] as u64);
                c.add(&mut odd[j], lo(a[j + 1], bi), o2, true);
                c.add(&mut odd[j + 1], hi(a[j + 1], bi), o3, true);
            }
            c.add(&mut odd[N - 2], lo(a[N - 1], bi), 0, true);
            c.add_last(&mut odd[N - 1], hi(a[N - 1], bi), 0, "rshift top word")?;
            Self::cmad(&mut c, even, a, bi);
            let t = odd[N - 1] as u64;
            c.add_last(&mut odd[N - 1], t, 0, "odd top word, product row")?;
        }
        let mi = even[0].wrapping_mul(self.m0);
        Self::cmad(&mut c, odd, &self.p[1..], mi);
        if c.cc != 0 {
            return Err("odd accumulator, reduction row");
        }
        Self::cmad(&mut c, even, &self.p, mi);
        let t = odd[N - 1] as u64;
        c.add_last(&mut odd[N - 1], t, 0, "odd top word, reduction row")
    }

    /// a b R^-1 before the final subtraction (`mul_words_unreduced`).
    fn mul(&self, a: &[u32; N], b: &[u32; N]) -> Result<[u32; N], Dropped> {
        let (mut even, mut odd) = ([0u32; N], [0u32; N]);
        for i in (0..N).step_by(2) {
            self.mad_n_redc(&mut even, &mut odd, a, b[i], i == 0)?;
            self.mad_n_redc(&mut odd, &mut even, a, b[i + 1], false)?;
        }
        let mut c = Chain { cc: 0 };
        for k in 0..N - 1 {
            let e = even[k] as u64;
            c.add(&mut even[k], e, odd[k + 1] as u64, k > 0);
        }
        let e = even[N - 1] as u64;
        c.add_last(&mut even[N - 1], e, 0, "merge")?;
        Ok(even)
    }

    /// acc += a[j] bi B^(off + j), j = j0, j0 + 2, ... (`mad_row`).
    fn mad_row(
        acc: &mut [u32],
        a: &[u32; N],
        bi: u32,
        off: usize,
        j0: usize,
    ) -> Result<(), Dropped> {
        let mut c = Chain { cc: 0 };
        let mut j = j0;
        while j < N {
            let (x0, x1) = (acc[off + j] as u64, acc[off + j + 1] as u64);
            c.add(&mut acc[off + j], x0, lo(a[j], bi), j > j0);
            c.add(&mut acc[off + j + 1], x1, hi(a[j], bi), true);
            j += 2;
        }
        if off + j < 2 * N {
            let x = acc[off + j] as u64;
            c.add_last(&mut acc[off + j], x, 0, "square row's carry word")
        } else if c.cc != 0 {
            Err("square row past the value")
        } else {
            Ok(())
        }
    }

    /// a^2 R^-1 before the final subtraction (`square_words`, then `redc_words`).
    fn sqr(&self, a: &[u32; N]) -> Result<[u32; N], Dropped> {
        let (mut od, mut ev) = (vec![0u32; 2 * N], vec![0u32; 2 * N]);
        for i in 0..N - 1 {
            Self::mad_row(&mut od, a, a[i], i, i + 1)?;
            if i + 2 < N {
                Self::mad_row(&mut ev, a, a[i], i, i + 2)?;
            }
        }
        let mut c = Chain { cc: 0 };
        let mut x = vec![0u32; 2 * N];
        for k in 0..2 * N {
            c.add(&mut x[k], od[k] as u64, ev[k] as u64, k > 0);
        }
        if c.cc != 0 || x[2 * N - 1] >> 31 != 0 {
            return Err("square's off-diagonal half");
        }
        let mut t = vec![0u32; 2 * N];
        t[0] = x[0] << 1;
        for k in 1..2 * N {
            t[k] = (x[k] << 1) | (x[k - 1] >> 31);
        }
        let mut c = Chain { cc: 0 };
        for i in 0..N {
            let (t0, t1) = (t[2 * i] as u64, t[2 * i + 1] as u64);
            c.add(&mut t[2 * i], t0, lo(a[i], a[i]), i > 0);
            c.add(&mut t[2 * i + 1], t1, hi(a[i], a[i]), true);
        }
        if c.cc != 0 {
            return Err("square's diagonal");
        }
        self.redc(t)
    }

    /// t R^-1 for 2N words t below p R, below 2 p (`redc_words`).
    fn redc(&self, mut t: Vec<u32>) -> Result<[u32; N], Dropped> {
        let mut u = vec![0u32; 2 * N];
        let mut carry = [0u32; N];
        let mut low = 0u32;
        for i in 0..N {
            let w = t[i].wrapping_add(u[i]);
            let m = w.wrapping_add(low).wrapping_mul(self.m0);
            for (j0, even_row) in [(0usize, true), (1, false)] {
                let row = if (i % 2 == 0) == even_row {
                    &mut t
                } else {
                    &mut u
                };
                let mut c = Chain { cc: 0 };
                let mut j = j0;
                while j < N {
                    let (x0, x1) = (row[i + j] as u64, row[i + j + 1] as u64);
                    c.add(&mut row[i + j], x0, lo(self.p[j], m), j > j0);
                    c.add(&mut row[i + j + 1], x1, hi(self.p[j], m), true);
                    j += 2;
                }
                let k = i + j0;
                if k < N {
                    let x = carry[k] as u64;
                    c.add_last(&mut carry[k], x, 0, "reduction carry word")?;
                } else if c.cc != 0 {
                    return Err("last reduction row");
                }
            }
            low = ((t[i] | u[i] | low) != 0) as u32;
        }
        let mut h = [0u32; N];
        let mut c = Chain { cc: 0 };
        for k in 0..N {
            c.add(&mut h[k], t[N + k] as u64, u[N + k] as u64, k > 0);
        }
        let mut c2 = Chain { cc: 0 };
        for (k, w) in carry.iter_mut().enumerate() {
            let x = *w as u64;
            c2.add(w, x, if k == 0 { low as u64 } else { 0 }, k > 0);
        }
        let mut r = [0u32; N];
        let mut c3 = Chain { cc: 0 };
        for k in 0..N {
            c3.add(&mut r[k], h[k] as u64, carry[k] as u64, k > 0);
        }
        if c.cc + c2.cc + c3.cc != 0 {
            return Err("quotient");
        }
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{fp_montgomery_top, fp_unreduced_is, fp_words};
    use rand_chacha::rand_core::{RngCore, SeedableRng};

    /// Little-endian word arithmetic on 12-word values.
    fn sub(a: &[u32; 12], b: &[u32; 12]) -> Option<[u32; 12]> {
        let mut r = [0u32; 12];
        let mut borrow = 0i64;
        for i in 0..12 {
            let d = a[i] as i64 - b[i] as i64 - borrow;
            r[i] = d as u32;
            borrow = (d < 0) as i64;
        }
        (borrow == 0).then_some(r)
    }
    fn add(a: &[u32; 12], b: &[u32; 12]) -> [u32; 12] {
        let mut r = [0u32; 12];
        let mut c = 0u64;
        for i in 0..12 {
            let s = a[i] as u64 + b[i] as u64 + c;
            r[i] = s as u32;
            c = s >> 32;
        }
        assert_eq!(c, 0);
        r
    }
    fn fp_modulus() -> [u32; 12] {
        add(&fp_words(&fp_montgomery_top()), &{
            let mut one = [0u32; 12];
            one[0] = 1;
            one
        })
    }
    fn as_fp(w: &[u32; 12]) -> blst::blst_fp {
        let mut l = [0u64; 6];
        for (i, x) in l.iter_mut().enumerate() {
            *x = w[2 * i] as u64 | (w[2 * i + 1] as u64) << 32;
        }
        blst::blst_fp { l }
    }
    /// The element below p congruent to x (x below 2 p).
    fn reduced(x: &[u32; 12], p: &[u32; 12]) -> [u32; 12] {
        sub(x, p).unwrap_or(*x)
    }

    /// Operands below 2 p: the edges and random values, some within 2^64 of 2 p.
    fn below_2p(p: &[u32; 12]) -> Vec<[u32; 12]> {
        let two_p = add(p, p);
        let one = {
            let mut o = [0u32; 12];
            o[0] = 1;
            o
        };
        let mut v = vec![[0u32; 12], one, sub(p, &one).unwrap(), *p, add(p, &one)];
        v.push(sub(&two_p, &one).unwrap());
        v.push(sub(&two_p, &add(&one, &one)).unwrap());
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(11);
        while v.len() < 600 {
            let mut w = [0u32; 12];
            for x in w.iter_mut() {
                *x = rng.next_u32();
            }
            if v.len() % 3 == 0 {
                // within 2^64 of 2 p
                w[2..].copy_from_slice(&two_p[2..]);
            } else {
                w[11] %= two_p[11] + 1;
            }
            if let Some(x) = sub(&two_p, &w).and_then(|d| (d != [0; 12]).then_some(w)) {
                v.push(x);
            }
        }
        v
    }

    #[test]
    fn fp_products_of_operands_below_2p_drop_no_carry() {
        let p = fp_modulus();
        let f = Field::new(p);
        let xs = below_2p(&p);
        let mut above_p = 0;
        for (i, x) in xs.iter().enumerate() {
            for y in xs.iter().skip(i % 7).step_by(7) {
                let r = f
                    .mul(x, y)
                    .unwrap_or_else(|at| panic!("carry dropped: {at}"));
                let mut e = blst::blst_fp::default();
                // SAFETY: plain blst field arithmetic on reduced values.
                unsafe {
                    blst::blst_fp_mul(&mut e, &as_fp(&reduced(x, &p)), &as_fp(&reduced(y, &p)))
                };
                match fp_unreduced_is(&r, &fp_words(&e)) {
                    Some(plus_p) => above_p += plus_p as usize,
                    None => panic!("product of {x:x?} and {y:x?} is {r:x?}"),
                }
            }
            let s = f.sqr(x).unwrap_or_else(|at| panic!("carry dropped: {at}"));
            let mut e = blst::blst_fp::default();
            // SAFETY: as above.
            unsafe { blst::blst_fp_sqr(&mut e, &as_fp(&reduced(x, &p))) };
            assert!(
                fp_unreduced_is(&s, &fp_words(&e)).is_some(),
                "square of {x:x?} is {s:x?}"
            );
        }
        assert!(above_p > 0, "no product reached p");
    }

    #[test]
    fn fr_first_operand_near_2r_drops_a_carry() {
        // Fr: 255 bits of 256, one spare bit: a first operand of 2 r - 2 overflows the
        // accumulator (a + r > 2^256), which is why mont_t takes an unreduced first operand
        // only with two spare bits
        let r: [u32; 8] = [
            0x0000_0001,
            0xffff_ffff,
            0xfffe_5bfe,
            0x53bd_a402,
            0x09a1_d805,
            0x3339_d808,
            0x299d_7d48,
            0x73ed_a753,
        ];
        let f = Field::new(r);
        let mut a = [0u32; 8];
        let mut c = 0u64;
        for i in 0..8 {
            let s = 2 * r[i] as u64 + c - if i == 0 { 2 } else { 0 };
            a[i] = s as u32;
            c = s >> 32;
        }
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(5);
        let dropped = (0..64)
            .filter(|_| {
                let mut b = [0u32; 8];
                for x in b.iter_mut() {
                    *x = rng.next_u32();
                }
                f.mul(&a, &b).is_err()
            })
            .count();
        assert!(dropped > 0, "no carry dropped at a = 2 r - 2");
    }
}
