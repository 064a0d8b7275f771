//! NTT over Fr on the GPU: forward / inverse / coset transforms and the fused Groth16 H
//! sequence, driving the kernels of `cuda/ntt.cu` through an [`Exec`].
//!
//! Forward: DIF passes (natural -> bit-reversed); the last pass writes
//! bit-reversed into a second buffer (natural order out). Coset forward scales
//! by g^i in the first pass's load. Inverse: DIF with w^-1, the last pass also
//! scales by n^-1 (and g^-j for the coset inverse) as it stores.
//! H: c = a b first where C's evaluations are not given ([`CInput::Product`]); then for each
//! of a, b, c: DIF(w^-1) (evaluations -> bit-reversed
//! coefficients), DIT(w) whose first pass scales position p by n^-1 g^rev(p)
//! (-> natural coset evaluations); then a = (a b - c) / (g^n - 1); DIF(w^-1)
//! whose last pass stores bit-reversed, scaled by n^-1 g^-j ([`HSequence::Separate`] and, with
//! passes fused where transforms meet, [`HSequence::Fused`]). [`HSequence::Quotient`] takes six
//! transforms: c is only inverted, and H is read off A B's coefficients (`h_poly_quotient`).

use blstrs::Scalar;
use ff::Field;

use crate::abi::{
    DevPtr, DevPtrMut, HPointwiseArgs, NttFusedArgs, NttPassArgs, PointwiseProductArgs,
    StageTablesArgs, ELEMENT_THREADS, FR_WORDS, FUSED_TOP_H_FROM_C, FUSED_TOP_PRODUCT, NTT_THREADS,
    NTT_TILE_LOG,
};
use crate::config::{HSequence, NttConfig};
use crate::error::GpuError;
use crate::exec::{grid, DevBuf, Exec};
use crate::layout::scalars_as_u32;
use crate::plan::{
    coset_generator, ntt_passes, ntt_passes_bitrev, pow_tables, root_of_unity, NttPass,
};

/// Which transform an NTT computes (natural order in and out).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NttKind {
    /// a_j = sum_i x_i w^(ij)
    Forward,
    /// x_i = n^-1 sum_j a_j w^(-ij)
    Inverse,
    /// evaluations on the coset g<w>, g = 7: a_j = sum_i x_i (g w^j)^i
    CosetForward,
    /// inverse of CosetForward
    CosetInverse,
}

/// Direction of the radix-2 stages of a pass plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Order {
    /// Gentleman-Sande: natural in, bit-reversed out (stages high to low).
    Dif,
    /// Cooley-Tukey: bit-reversed in, natural out (stages low to high).
    Dit,
}

/// Where the last pass of a plan writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Output {
    /// In place.
    InPlace,
    /// Bit-reversed into a second buffer.
    BitReversedInto(u64),
}

/// Which index the load factor of the first pass is taken at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FactorIndex {
    /// The element's index.
    Natural,
    /// The bit-reversed index.
    BitReversed,
}

/// The twiddle and coset tables of one domain size on the device.
pub(crate) struct NttTables<B> {
    pub(crate) log_n: u32,
    pub(crate) pow_lo_bits: u32,
    pub(crate) tw_fwd: B,
    pub(crate) tw_inv: B,
    pub(crate) g_lo: B,
    pub(crate) g_hi: B,
    pub(crate) ginv_lo: B,
    pub(crate) ginv_hi: B,
    /// n^-1 g^j, j < 2^pow_lo_bits: g_lo with n^-1 folded in (factor n^-1 g^i in one product)
    pub(crate) ng_lo: B,
    /// n^-1 g^-j, j < 2^pow_lo_bits
    pub(crate) nginv_lo: B,
    /// n^-1 (g^n - 1)^-1 g^-j, j < 2^pow_lo_bits (the quotient sequence's last store)
    pub(crate) nzginv_lo: B,
    /// n^-1 (Montgomery)
    pub(crate) n_inv: B,
    /// (g^n - 1)^-1 (Montgomery)
    pub(crate) z_inv: B,
    /// n^-1 (g^n - 1)^-1 (Montgomery)
    pub(crate) nz_inv: B,
}

/// The tables' device addresses.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TablePtrs {
    log_n: u32,
    lo_bits: u32,
    tw_fwd: u64,
    tw_inv: u64,
    g_lo: u64,
    g_hi: u64,
    ginv_lo: u64,
    ginv_hi: u64,
    ng_lo: u64,
    nginv_lo: u64,
    nzginv_lo: u64,
    n_inv: u64,
    z_inv: u64,
    nz_inv: u64,
}

impl<B: DevBuf> NttTables<B> {
    pub(crate) fn ptrs(&self) -> TablePtrs {
        TablePtrs {
            log_n: self.log_n,
            lo_bits: self.pow_lo_bits,
            tw_fwd: self.tw_fwd.ptr(),
            tw_inv: self.tw_inv.ptr(),
            g_lo: self.g_lo.ptr(),
            g_hi: self.g_hi.ptr(),
            ginv_lo: self.ginv_lo.ptr(),
            ginv_hi: self.ginv_hi.ptr(),
            ng_lo: self.ng_lo.ptr(),
            nginv_lo: self.nginv_lo.ptr(),
            nzginv_lo: self.nzginv_lo.ptr(),
            n_inv: self.n_inv.ptr(),
            z_inv: self.z_inv.ptr(),
            nz_inv: self.nz_inv.ptr(),
        }
    }

    /// Converts every table (resident data).
    pub(crate) fn map<C>(self, f: impl Fn(B) -> C) -> NttTables<C> {
        NttTables {
            log_n: self.log_n,
            pow_lo_bits: self.pow_lo_bits,
            tw_fwd: f(self.tw_fwd),
            tw_inv: f(self.tw_inv),
            g_lo: f(self.g_lo),
            g_hi: f(self.g_hi),
            ginv_lo: f(self.ginv_lo),
            ginv_hi: f(self.ginv_hi),
            ng_lo: f(self.ng_lo),
            nginv_lo: f(self.nginv_lo),
            nzginv_lo: f(self.nzginv_lo),
            n_inv: f(self.n_inv),
            z_inv: f(self.z_inv),
            nz_inv: f(self.nz_inv),
        }
    }
}

/// A scaling factor c * G(i) for `ntt_pass` (device pointers; 0 = absent).
#[derive(Clone, Copy, Debug, Default)]
struct Scale {
    c: u64,
    lo: u64,
    hi: u64,
}

/// What the first pass of a plan does to each element as it loads it.
#[derive(Clone, Copy, Debug, Default)]
struct Load {
    /// Reads it from this buffer instead of the pass's source (0: the source).
    from: u64,
    /// Multiplies it by the scalar of this buffer at the same index (0: none).
    times: u64,
    /// Multiplies it by a factor taken at its index.
    scale: Option<(Scale, FactorIndex)>,
}

impl Load {
    fn scaled(scale: Scale, at: FactorIndex) -> Self {
        Load {
            from: 0,
            times: 0,
            scale: Some((scale, at)),
        }
    }
}

/// What the last pass of a plan does to each element as it stores it.
#[derive(Clone, Copy, Debug, Default)]
struct Store {
    /// Multiplies it by a factor taken at its destination index.
    scale: Option<Scale>,
    /// Then subtracts the scalar of this buffer at its source index (0: none).
    minus: u64,
}

impl Store {
    fn scaled(scale: Scale) -> Self {
        Store {
            scale: Some(scale),
            minus: 0,
        }
    }
}

#[cfg(any(test, feature = "testkit"))]
/// log2 of a power-of-two NTT length.
pub(crate) fn log2_exact(n: usize) -> Result<u32, GpuError> {
    if n == 0 || !n.is_power_of_two() {
        return Err(GpuError::InvalidInput(format!(
            "NTT length {n} is not a power of two"
        )));
    }
    let lg = n.trailing_zeros();
    if lg > 31 {
        return Err(GpuError::InvalidInput(format!(
            "NTT length 2^{lg} too large"
        )));
    }
    Ok(lg)
}

/// The split power tables of a domain's coset generator and its inverse, and its stage
/// twiddles built on the device from power tables of w and w^-1. Temporary tables are freed
/// (and the lane synchronised) before it returns.
pub(crate) fn build_tables<E: Exec>(e: &E, log_n: u32) -> Result<NttTables<E::Buf>, GpuError> {
    let n = 1usize << log_n;
    let half = (n / 2).max(1);
    let w = root_of_unity(log_n);
    let winv = w.invert().unwrap_or(Scalar::ONE);
    // twiddles: one contiguous table per stage (n - 1 entries, see `twiddle` in cuda/ntt.cu),
    // from the split power tables of w
    let stage_tables = |base: Scalar| -> Result<E::Buf, GpuError> {
        let t = pow_tables(base, half);
        let lo = e.upload(scalars_as_u32(&t.lo))?;
        let hi = e.upload(scalars_as_u32(&t.hi))?;
        let count = (n - 1).max(1);
        let out = e.alloc(count * FR_WORDS as usize)?;
        e.launch(
            grid(count, ELEMENT_THREADS),
            ELEMENT_THREADS,
            &StageTablesArgs {
                out: DevPtrMut(out.ptr()),
                lo: DevPtr(lo.ptr()),
                hi: DevPtr(hi.ptr()),
                log_n,
                lo_bits: t.lo_bits,
            },
        )?;
        Ok(out)
    };
    let tw_fwd = stage_tables(w)?;
    let tw_inv = stage_tables(winv)?;
    let g = coset_generator();
    let ginv = g.invert().unwrap_or(Scalar::ONE);
    let gt = pow_tables(g, n);
    let gi = pow_tables(ginv, n);
    let n_inv = Scalar::from(n as u64).invert().unwrap_or(Scalar::ONE);
    let z = g.pow_vartime([n as u64]) - Scalar::ONE;
    let z_inv = z.invert().unwrap_or(Scalar::ONE);
    let ng_lo: Vec<Scalar> = gt.lo.iter().map(|x| x * n_inv).collect();
    let nginv_lo: Vec<Scalar> = gi.lo.iter().map(|x| x * n_inv).collect();
    let nz_inv = n_inv * z_inv;
    let nzginv_lo: Vec<Scalar> = gi.lo.iter().map(|x| x * nz_inv).collect();
    let tables = NttTables {
        log_n,
        pow_lo_bits: gt.lo_bits,
        tw_fwd,
        tw_inv,
        g_lo: e.upload(scalars_as_u32(&gt.lo))?,
        g_hi: e.upload(scalars_as_u32(&gt.hi))?,
        ginv_lo: e.upload(scalars_as_u32(&gi.lo))?,
        ginv_hi: e.upload(scalars_as_u32(&gi.hi))?,
        ng_lo: e.upload(scalars_as_u32(&ng_lo))?,
        nginv_lo: e.upload(scalars_as_u32(&nginv_lo))?,
        nzginv_lo: e.upload(scalars_as_u32(&nzginv_lo))?,
        n_inv: e.upload(scalars_as_u32(&[n_inv]))?,
        z_inv: e.upload(scalars_as_u32(&[z_inv]))?,
        nz_inv: e.upload(scalars_as_u32(&[nz_inv]))?,
    };
    e.sync()?;
    Ok(tables)
}

/// One pass (`p`) of a plan over the 2^log_n scalars at `src` (or `load.from`), writing `dst`
/// (the same address in place, unless `bitrev_out`); `load` applies to its input, `store` to
/// its output.
#[allow(clippy::too_many_arguments)]
fn launch_pass<E: Exec>(
    e: &E,
    src: u64,
    dst: u64,
    tw: u64,
    t: &TablePtrs,
    p: &NttPass,
    order: Order,
    load: Load,
    store: Store,
    bitrev_out: bool,
) -> Result<(), GpuError> {
    let tile = 1usize << (p.t + p.lg_l + p.hb);
    let blocks = (1usize << t.log_n) / tile;
    let src = if load.from != 0 { load.from } else { src };
    let (ls, lidx) = load
        .scale
        .unwrap_or((Scale::default(), FactorIndex::Natural));
    let ss = store.scale.unwrap_or_default();
    e.launch(
        blocks as u32,
        NTT_THREADS,
        &NttPassArgs {
            input: DevPtr(src),
            output: DevPtrMut(dst),
            tw: DevPtr(tw),
            load_mul: DevPtr(load.times),
            load_c: DevPtr(ls.c),
            load_lo: DevPtr(ls.lo),
            load_hi: DevPtr(ls.hi),
            store_c: DevPtr(ss.c),
            store_lo: DevPtr(ss.lo),
            store_hi: DevPtr(ss.hi),
            store_sub: DevPtr(store.minus),
            log_n: t.log_n,
            s_lo: p.s_lo,
            t: p.t,
            lg_l: p.lg_l,
            dif: u32::from(order == Order::Dif),
            load_rev: u32::from(lidx == FactorIndex::BitReversed),
            bitrev_out: u32::from(bitrev_out),
            lo_bits: t.lo_bits,
            hb: p.hb,
        },
    )
}

/// Radix-2 passes over `data` (2^log_n elements, log_n >= 1), in place except where `output`
/// says the last pass writes bit-reversed elsewhere. `load` applies to the input of the first
/// pass, `store` to the output of the last.
#[allow(clippy::too_many_arguments)]
fn run_passes<E: Exec>(
    e: &E,
    data: u64,
    tw: u64,
    t: &TablePtrs,
    order: Order,
    load: Load,
    store: Store,
    output: Output,
) -> Result<(), GpuError> {
    let log_n = t.log_n;
    let bitrev = matches!(output, Output::BitReversedInto(_));
    let mut passes = if order == Order::Dif && bitrev {
        ntt_passes_bitrev(log_n)
    } else {
        ntt_passes(log_n)
    };
    if order == Order::Dif {
        passes.reverse();
    }
    let count = passes.len();
    for (i, p) in passes.iter().enumerate() {
        let first = i == 0;
        let last = i + 1 == count;
        let (dst, bitrev_out) = match output {
            Output::BitReversedInto(out) if last => (out, true),
            _ => (data, false),
        };
        launch_pass(
            e,
            data,
            dst,
            tw,
            t,
            p,
            order,
            if first { load } else { Load::default() },
            if last { store } else { Store::default() },
            bitrev_out,
        )?;
    }
    Ok(())
}

#[cfg(any(test, feature = "testkit"))]
/// NTT of the `1 << t.log_n` scalars in `data`, natural order in and out. The result lands in
/// a second buffer that replaces `data` (the old one is freed on the stream).
pub(crate) fn ntt<E: Exec>(
    e: &E,
    data: &mut E::Buf,
    t: &TablePtrs,
    kind: NttKind,
) -> Result<(), GpuError> {
    let n = 1usize << t.log_n;
    if data.words() < n * FR_WORDS as usize {
        return Err(GpuError::InvalidInput(format!(
            "NTT of 2^{} over a buffer of {} scalars",
            t.log_n,
            data.words() / FR_WORDS as usize
        )));
    }
    if t.log_n == 0 {
        return Ok(()); // every transform of one element is the identity
    }
    let tmp = e.alloc(n * FR_WORDS as usize)?;
    ntt_into(e, data.ptr(), tmp.ptr(), t, kind)?;
    *data = tmp;
    Ok(())
}

#[cfg(any(test, feature = "testkit"))]
/// NTT of the 2^`t.log_n` (>= 2) scalars at `src` into `dst` (natural order in and out; `src`
/// is overwritten with scratch).
pub(crate) fn ntt_into<E: Exec>(
    e: &E,
    src: u64,
    dst: u64,
    t: &TablePtrs,
    kind: NttKind,
) -> Result<(), GpuError> {
    let out = Output::BitReversedInto(dst);
    let g = Scale {
        c: 0,
        lo: t.g_lo,
        hi: t.g_hi,
    };
    let ninv = Scale {
        c: t.n_inv,
        lo: 0,
        hi: 0,
    };
    let ninv_ginv = Scale {
        c: t.n_inv,
        lo: t.ginv_lo,
        hi: t.ginv_hi,
    };
    let (tw, load, store) = match kind {
        NttKind::Forward => (t.tw_fwd, Load::default(), Store::default()),
        NttKind::CosetForward => (
            t.tw_fwd,
            Load::scaled(g, FactorIndex::Natural),
            Store::default(),
        ),
        NttKind::Inverse => (t.tw_inv, Load::default(), Store::scaled(ninv)),
        NttKind::CosetInverse => (t.tw_inv, Load::default(), Store::scaled(ninv_ginv)),
    };
    run_passes(e, src, tw, t, Order::Dif, load, store, out)?;
    Ok(())
}

/// What the H sequence's third buffer holds when it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CInput {
    /// C's evaluations (uploaded, or any values a test gives).
    Given,
    /// Nothing yet: C's evaluations are `a∘b`, which holds for a witness that satisfies every
    /// constraint (synthesis checks it), and are computed into the buffer first. The proving
    /// path: a third less to upload.
    Product,
}

/// Which buffer holds H after [`h_poly_at`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HIn {
    /// The first (a's).
    A,
    /// The second (b's).
    B,
}

/// Groth16 H on device-resident evaluations over the domain of `t` (a, b, c hold at least
/// n scalars each): on return `a` holds the n coefficients of H = (A B - C) / Z (computed on
/// the coset g<w>); `b` and `c` hold scratch. `c_in` says whether `c` holds C's evaluations or
/// they are `a∘b`. Allocates nothing.
pub(crate) fn h_poly<E: Exec>(
    e: &E,
    a: &mut E::Buf,
    b: &mut E::Buf,
    c: &mut E::Buf,
    t: &TablePtrs,
    cfg: &NttConfig,
    c_in: CInput,
) -> Result<(), GpuError> {
    let n = 1usize << t.log_n;
    let words = n * FR_WORDS as usize;
    if a.words() < words || b.words() < words || c.words() < words {
        return Err(GpuError::InvalidInput(format!(
            "h_poly over 2^{} with buffers of {} / {} / {} words",
            t.log_n,
            a.words(),
            b.words(),
            c.words()
        )));
    }
    if h_poly_at(e, a.ptr(), b.ptr(), c.ptr(), t, cfg, c_in)? == HIn::B {
        std::mem::swap(a, b);
    }
    Ok(())
}

/// [`h_poly`] on device addresses (each of 2^`t.log_n` scalars); says where H landed.
pub(crate) fn h_poly_at<E: Exec>(
    e: &E,
    a: u64,
    b: u64,
    c: u64,
    t: &TablePtrs,
    cfg: &NttConfig,
    c_in: CInput,
) -> Result<HIn, GpuError> {
    // the fused passes need a plan of at least two passes (above one tile)
    let fused = t.log_n > NTT_TILE_LOG;
    if cfg.h == HSequence::Quotient && fused {
        // the product, if any, is taken as c's first pass loads a and b
        return h_poly_quotient(e, a, b, c, t, c_in);
    }
    if c_in == CInput::Product {
        pointwise_product(e, c, a, b, 1usize << t.log_n)?;
    }
    match cfg.h {
        HSequence::Fused if fused => h_poly_fused(e, a, b, c, t),
        _ => h_poly_separate(e, a, b, c, t),
    }
}

/// `out = a∘b` over `n` scalars (device addresses).
pub(crate) fn pointwise_product<E: Exec>(
    e: &E,
    out: u64,
    a: u64,
    b: u64,
    n: usize,
) -> Result<(), GpuError> {
    e.launch(
        grid(n, ELEMENT_THREADS),
        ELEMENT_THREADS,
        &PointwiseProductArgs {
            out: DevPtrMut(out),
            a: DevPtr(a),
            b: DevPtr(b),
            n: n as u32,
        },
    )
}

/// The H sequence with separate passes and a pointwise kernel (7 transforms).
fn h_poly_separate<E: Exec>(e: &E, a: u64, b: u64, c: u64, t: &TablePtrs) -> Result<HIn, GpuError> {
    let n = 1usize << t.log_n;
    let ninv_g = Scale {
        c: t.n_inv,
        lo: t.g_lo,
        hi: t.g_hi,
    };
    let ninv_ginv = Scale {
        c: t.n_inv,
        lo: t.ginv_lo,
        hi: t.ginv_hi,
    };
    if t.log_n > 0 {
        for x in [a, b, c] {
            // evaluations -> bit-reversed coefficients (times n)
            run_passes(
                e,
                x,
                t.tw_inv,
                t,
                Order::Dif,
                Load::default(),
                Store::default(),
                Output::InPlace,
            )?;
            // * n^-1 g^i on load, then -> natural-order coset evaluations
            run_passes(
                e,
                x,
                t.tw_fwd,
                t,
                Order::Dit,
                Load::scaled(ninv_g, FactorIndex::BitReversed),
                Store::default(),
                Output::InPlace,
            )?;
        }
    }
    e.launch(
        grid(n, ELEMENT_THREADS),
        ELEMENT_THREADS,
        &HPointwiseArgs {
            a: DevPtrMut(a),
            b: DevPtr(b),
            c: DevPtr(c),
            zinv: DevPtr(t.z_inv),
            n: n as u32,
        },
    )?;
    if t.log_n == 0 {
        return Ok(HIn::A);
    }
    // inverse coset NTT; the last pass writes bit-reversed, scaled by n^-1 g^-j, into b's (now
    // free) buffer
    run_passes(
        e,
        a,
        t.tw_inv,
        t,
        Order::Dif,
        Load::default(),
        Store::scaled(ninv_ginv),
        Output::BitReversedInto(b),
    )?;
    Ok(HIn::B)
}

/// Whether [`to_coset`] runs the coset transform's last pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LastPass {
    /// It does: the coset evaluations are complete.
    Run,
    /// It leaves it to the caller, which fuses it with what follows (`ntt_fused_top`).
    Leave,
}

/// Takes `x` from evaluations to coset evaluations with fused passes over `plan` (at least two
/// passes): the inverse's passes down to the lowest, one fused pass (the inverse's lowest, the
/// n^-1 g^rev(i) scaling, the coset transform's lowest), then the coset transform's other
/// passes (but the last where `last` says so).
fn to_coset<E: Exec>(
    e: &E,
    x: u64,
    t: &TablePtrs,
    plan: &[NttPass],
    last: LastPass,
) -> Result<(), GpuError> {
    let pass = |p: &NttPass, tw: u64, order: Order| {
        launch_pass(
            e,
            x,
            x,
            tw,
            t,
            p,
            order,
            Load::default(),
            Store::default(),
            false,
        )
    };
    for p in plan[1..].iter().rev() {
        pass(p, t.tw_inv, Order::Dif)?;
    }
    let mid = &plan[0];
    e.launch_as(
        "ntt_fused_mid",
        fused_blocks(t, mid),
        NTT_THREADS,
        &fused_args(t, mid, x, 0, 0, 0, TopPointwise::HFromC),
    )?;
    let end = match last {
        LastPass::Run => plan.len(),
        LastPass::Leave => plan.len() - 1,
    };
    for p in &plan[1..end] {
        pass(p, t.tw_fwd, Order::Dit)?;
    }
    Ok(())
}

/// Takes `x` to the coset with the plan of the bit-reversing inverse, whose top pass
/// `ntt_fused_top` runs with the `pointwise` step (reading `pa`, `pb` at the same indices) and
/// the final inverse's first pass, into `out`. Returns the plan, which [`final_inverse`]
/// continues.
fn coset_then_top<E: Exec>(
    e: &E,
    x: u64,
    out: u64,
    [pa, pb]: [u64; 2],
    t: &TablePtrs,
    pointwise: TopPointwise,
) -> Result<Vec<NttPass>, GpuError> {
    let plan = ntt_passes_bitrev(t.log_n);
    to_coset(e, x, t, &plan, LastPass::Leave)?;
    let top = &plan[plan.len() - 1];
    e.launch_as(
        "ntt_fused_top",
        fused_blocks(t, top),
        NTT_THREADS,
        &fused_args(t, top, x, out, pa, pb, pointwise),
    )?;
    Ok(plan)
}

/// The final inverse after `ntt_fused_top` wrote its first pass into `a`: the middle passes of
/// `plan` in place, then its lowest pass, stored bit-reversed into `out` by `store`.
fn final_inverse<E: Exec>(
    e: &E,
    a: u64,
    out: u64,
    t: &TablePtrs,
    plan: &[NttPass],
    store: Store,
) -> Result<(), GpuError> {
    let k = plan.len();
    for p in plan[1..k - 1].iter().rev() {
        launch_pass(
            e,
            a,
            a,
            t.tw_inv,
            t,
            p,
            Order::Dif,
            Load::default(),
            Store::default(),
            false,
        )?;
    }
    launch_pass(
        e,
        a,
        out,
        t.tw_inv,
        t,
        &plan[0],
        Order::Dif,
        Load::default(),
        store,
        true,
    )
}

/// The H sequence with fused passes (log_n > NTT_TILE_LOG): see `ntt_fused_mid` and
/// `ntt_fused_top` in cuda/ntt.cu. a and b to the coset ([`to_coset`]); c the same with the
/// plan of the bit-reversing inverse, whose top pass then also runs the pointwise step and the
/// final inverse's first pass into a; the final inverse continues on a and stores
/// bit-reversed, scaled by n^-1 g^-j, into b.
fn h_poly_fused<E: Exec>(e: &E, a: u64, b: u64, c: u64, t: &TablePtrs) -> Result<HIn, GpuError> {
    for x in [a, b] {
        to_coset(e, x, t, &ntt_passes(t.log_n), LastPass::Run)?;
    }
    let plan = coset_then_top(e, c, a, [a, b], t, TopPointwise::HFromC)?;
    let ninv_ginv = Scale {
        c: 0,
        lo: t.nginv_lo,
        hi: t.ginv_hi,
    };
    final_inverse(e, a, b, t, &plan, Store::scaled(ninv_ginv))?;
    Ok(HIn::B)
}

/// The quotient sequence (log_n > NTT_TILE_LOG; six transforms): H is the upper half of A B's
/// coefficients (cuda/ntt.cu). c: the inverse alone (its first pass loads a b where
/// `c_in` is [`CInput::Product`]), in place, bit-reversed, scaled by n^-1 (g^n - 1)^-1 as its
/// last pass stores. a to the coset; b to the coset with the plan of the bit-reversing inverse,
/// whose top pass also multiplies by A's coset evaluations and runs the final inverse's first
/// pass into a; the final inverse continues on a and stores bit-reversed into b, scaled by
/// n^-1 (g^n - 1)^-1 g^-j, minus C's scaled coefficients.
fn h_poly_quotient<E: Exec>(
    e: &E,
    a: u64,
    b: u64,
    c: u64,
    t: &TablePtrs,
    c_in: CInput,
) -> Result<HIn, GpuError> {
    let load = match c_in {
        CInput::Product => Load {
            from: a,
            times: b,
            scale: None,
        },
        CInput::Given => Load::default(),
    };
    let nz_inv = Scale {
        c: t.nz_inv,
        lo: 0,
        hi: 0,
    };
    run_passes(
        e,
        c,
        t.tw_inv,
        t,
        Order::Dif,
        load,
        Store::scaled(nz_inv),
        Output::InPlace,
    )?;
    to_coset(e, a, t, &ntt_passes(t.log_n), LastPass::Run)?;
    let plan = coset_then_top(e, b, a, [a, 0], t, TopPointwise::Product)?;
    let store = Store {
        scale: Some(Scale {
            c: 0,
            lo: t.nzginv_lo,
            hi: t.ginv_hi,
        }),
        minus: c,
    };
    final_inverse(e, a, b, t, &plan, store)?;
    Ok(HIn::B)
}

/// The pointwise step of `ntt_fused_top`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TopPointwise {
    /// (pa pb - x) (g^n - 1)^-1: H's coset evaluations from C's.
    HFromC,
    /// pa x: A B's coset evaluations.
    Product,
}

fn fused_blocks(t: &TablePtrs, p: &NttPass) -> u32 {
    ((1usize << t.log_n) >> (p.t + p.lg_l + p.hb)) as u32
}

/// Arguments of a fused pass: `data` in (and out for the mid pass), `out`, `pa`, `pb` and the
/// pointwise step for the top pass (0 for the mid pass).
fn fused_args(
    t: &TablePtrs,
    p: &NttPass,
    data: u64,
    out: u64,
    pa: u64,
    pb: u64,
    pointwise: TopPointwise,
) -> NttFusedArgs {
    let top = out != 0;
    NttFusedArgs {
        data: DevPtrMut(data),
        out: DevPtrMut(out),
        pa: DevPtr(pa),
        pb: DevPtr(pb),
        // mid: the inverse (w^-1) then the coset transform (w); top: the other way round
        tw_first: DevPtr(if top { t.tw_fwd } else { t.tw_inv }),
        tw_second: DevPtr(if top { t.tw_inv } else { t.tw_fwd }),
        scale_lo: DevPtr(t.ng_lo),
        scale_hi: DevPtr(t.g_hi),
        zinv: DevPtr(t.z_inv),
        log_n: t.log_n,
        s_lo: p.s_lo,
        t: p.t,
        lg_l: p.lg_l,
        hb: p.hb,
        lo_bits: t.lo_bits,
        pointwise: match pointwise {
            TopPointwise::HFromC => FUSED_TOP_H_FROM_C,
            TopPointwise::Product => FUSED_TOP_PRODUCT,
        },
    }
}
