// The binary interface between the host code and the CUDA kernels: the constants both sides
// must agree on (thread counts, tile sizes, launch bounds, limb counts) and one `#[repr(C)]`
// argument struct per kernel.
//
// This file is the single source of truth. The crate includes it as `crate::abi`; build.rs
// includes it too and writes `proofline_abi.cuh` from it (the `#define`s, the C structs, and
// `static_assert`s on every struct's size and field offsets), which every `.cu` file includes.
// A kernel whose C signature drifts from its Rust struct therefore fails to compile.
//
// Rules for this file: no `use` of other crates (build.rs compiles it alone); the includer brings
// `DeviceRepr` (cudarc's marker) and `KernelArgs` into scope.

/// A device pointer the kernel only reads (`const u32*` in C).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DevPtr(pub u64);

/// A device pointer the kernel writes (`u32*` in C).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DevPtrMut(pub u64);

/// One shared constant: its name in C and its value.
pub struct SharedConst {
    /// `#define` name.
    pub name: &'static str,
    /// Value.
    pub value: u32,
}

/// The layout of one argument struct, for the generated header's assertions.
pub struct ArgsLayout {
    /// The kernels launched with it, as (`.cu` module, kernel): the G1 and G2 twins of a curve
    /// kernel share one struct.
    pub kernels: &'static [(&'static str, &'static str)],
    /// C struct name.
    pub c_name: &'static str,
    /// C declaration.
    pub c_decl: &'static str,
    /// `sizeof`.
    pub size: usize,
    /// `(field, offsetof)`.
    pub offsets: &'static [(&'static str, usize)],
}

macro_rules! shared_consts {
    ($( $(#[$doc:meta])* $name:ident = $value:expr; )*) => {
        $( $(#[$doc])* pub const $name: u32 = $value; )*
        /// Every shared constant, for the generated header.
        pub const SHARED_CONSTS: &[SharedConst] = &[
            $( SharedConst { name: stringify!($name), value: $name }, )*
        ];
    };
}

shared_consts! {
    /// u32 words per Fr element.
    FR_WORDS = 8;
    /// u32 words per affine G1 point.
    AFFINE_WORDS = 24;
    /// u32 words per Jacobian G1 point.
    JACOBIAN_WORDS = 36;
    /// u32 words per XYZZ bucket.
    XYZZ_WORDS = 48;
    /// u32 words per affine G2 point.
    G2_AFFINE_WORDS = 48;
    /// u32 words per Jacobian G2 point.
    G2_JACOBIAN_WORDS = 72;
    /// u32 words per G2 XYZZ bucket.
    G2_XYZZ_WORDS = 96;
    /// Threads per block of the element-wise kernels (digits, scatter, pointwise, gathers).
    ELEMENT_THREADS = 256;
    /// log2 of the shared-memory tile of `ntt_pass`, in elements.
    NTT_TILE_LOG = 10;
    /// Elements of the shared-memory tile of `ntt_pass`.
    NTT_TILE = 1 << 10;
    /// Threads per block of `ntt_pass`.
    NTT_THREADS = 256;
    /// Blocks per multiprocessor in `ntt_pass`'s `__launch_bounds__` (80 registers).
    NTT_MIN_BLOCKS = 3;
    /// `ntt_fused_top`'s pointwise step: x = (pa pb - x) zinv (H from C's coset evaluations).
    FUSED_TOP_H_FROM_C = 0;
    /// `ntt_fused_top`'s pointwise step: x = pa x (the coset evaluations of A B).
    FUSED_TOP_PRODUCT = 1;
    /// Threads per block of `scan_tiles`.
    SCAN_THREADS = 256;
    /// Elements per thread of `scan_tiles`.
    SCAN_ITEMS = 4;
    /// Elements per tile of the exclusive scan.
    SCAN_TILE = 256 * 4;
    /// Threads of the single block of `scan_sums`.
    SCAN_SUMS_THREADS = 1024;
    /// Threads per block of the tree reductions (ones sum, big buckets, window combination).
    RED_THREADS = 128;
    /// The same for G2 (a G2 bucket is twice a G1 bucket: 24 KB of shared memory per block).
    RED_THREADS_G2 = 64;
    /// Threads per block of `msm_bucket_acc`.
    ACC_THREADS = 64;
    /// Blocks per multiprocessor in `msm_bucket_acc`'s `__launch_bounds__` (168 registers).
    ACC_BLOCKS_PER_SM = 6;
    /// The same for `msm_g2_bucket_acc` (at most 255 registers: a G2 bucket alone takes 96).
    ACC_BLOCKS_PER_SM_G2 = 3;
    /// Threads per block of `msm_bucket_fixup` and `msm_bucket_reduce`.
    SMALL_THREADS = 64;
    /// Windows whose digits `msm_digits` computes before issuing their atomics.
    DIGIT_GROUP = 8;
    /// Threads per block of the two-level sort's kernels.
    SORT_THREADS = 256;
    /// Points per block (tile) of the two-level sort's coarse passes.
    SORT_TILE = 8192;
    /// Most coarse bins of the two-level sort (a shared-memory counter each).
    SORT_BINS_MAX = 4096;
    /// Most fine bits of the two-level sort (2^12 shared-memory counters in its fine pass).
    SORT_FINE_BITS_MAX = 12;
    /// Threads per block of the radix sort's kernels (`msm_radix_digits`, `msm_radix_scatter`).
    RADIX_THREADS = 256;
    /// Entries per block (tile) of a radix pass: RADIX_TILE / RADIX_THREADS rounds of one entry
    /// per thread.
    RADIX_TILE = 4096;
    /// Most bits of the key one radix pass sorts by (2^RADIX_BITS shared-memory counters).
    RADIX_BITS = 8;
    /// A radix pass's published count of a digit in a tile (its word in `status`): the tile's
    /// own count, below RADIX_COUNT_MASK.
    RADIX_AGGREGATE = 1 << 30;
    /// The same word once it holds the sum over the tile and every tile before it.
    RADIX_INCLUSIVE = 1 << 31;
    /// The count in a published word: a bucket set's entries stay below it.
    RADIX_COUNT_MASK = (1 << 30) - 1;
    /// Most counters of `msm_radix_prep`'s histogram in shared memory: every set's digits of
    /// every pass (32 KB).
    RADIX_HIST_MAX = 8192;
    /// Blocks per multiprocessor that `msm_radix_prep` launches (grid-stride over the points).
    RADIX_PREP_BLOCKS_PER_SM = 6;
    /// Threads per block of the batch-affine rounds (`msm_affine_fwd`, `msm_affine_bwd`).
    AFF_THREADS = 128;
    /// Blocks per multiprocessor in their `__launch_bounds__` (128 registers), and what a round
    /// launches: one wave.
    AFF_BLOCKS_PER_SM = 4;
    /// The same for G2's rounds (255 registers).
    AFF_BLOCKS_PER_SM_G2 = 2;
    /// Leaves of one product tree of the batched inversion (its threads per block): one tree
    /// per block of values, one over the blocks' products (two blocks' to a leaf).
    AFF_INV_THREADS = 256;
    /// Most values the batched inversion inverts: AFF_INV_THREADS per block of the first level,
    /// two blocks' products to each leaf of the single tree of the second.
    AFF_INV_MAX = 2 * AFF_INV_THREADS * AFF_INV_THREADS;
    /// Points per block of the big-bucket kernel.
    BIG_PER_BLOCK = 2048;
    /// Threads per block of `msm_ones_count` / `msm_ones_expand`: one bitmap word each, or
    /// ONES_TRIPLE_WORDS over aligned triples of bases.
    ONES_THREADS = 256;
    /// Bitmap words a thread of `msm_ones_count` / `msm_ones_expand` reads over aligned triples
    /// of bases: 32 triples, since a triple straddles words. A range over triples starts at a
    /// multiple of 32 times this many bases (word-aligned and a whole triple).
    ONES_TRIPLE_WORDS = 3;
    /// Subset sums resident per aligned triple (a, b, c) of bases: a + b, a + c, b + c and
    /// a + b + c, in that order.
    ONES_TRIPLE_SUMS = 4;
    /// The fewest blocks the window combination gives a bucket set
    /// (`plan::WindowPlan::combine_groups`).
    WINDOW_GROUPS = 16;
    /// Buckets per segment of the bucket reduction.
    REDUCE_SEGMENT = 16;
    /// Threads per block of the element-wise test kernels on G1 points.
    G1_TEST_THREADS = 128;
}

/// Marker of the "no bucket" / "no entry" value written by the MSM kernels.
pub const NONE_U32: u32 = 0xffff_ffff;

macro_rules! c_type {
    (DevPtr) => {
        "const u32*"
    };
    (DevPtrMut) => {
        "u32*"
    };
    (u32) => {
        "u32"
    };
}

macro_rules! kernel_args {
    ($(
        $(#[$doc:meta])*
        $( $module:literal :: $kernel:literal )|+ => $name:ident ($cname:literal) {
            $( $(#[$fdoc:meta])* $field:ident : $ty:ident ),* $(,)?
        }
    )*) => {
        $(
            $(#[$doc])*
            #[repr(C)]
            #[derive(Clone, Copy, Debug, Default)]
            pub struct $name {
                $( $(#[$fdoc])* pub $field: $ty, )*
            }

            // SAFETY: a #[repr(C)] struct of u32 and u64 fields whose C twin (generated into
            // proofline_abi.cuh) has the same size and field offsets, asserted at compile time.
            unsafe impl DeviceRepr for $name {}

            impl KernelArgs for $name {
                const KERNELS: &'static [(&'static str, &'static str)] = &[ $( ($module, $kernel) ),+ ];
            }
        )*

        /// Every argument struct, for the generated header.
        pub const ARGS_LAYOUTS: &[ArgsLayout] = &[
            $(
                ArgsLayout {
                    kernels: &[ $( ($module, $kernel) ),+ ],
                    c_name: $cname,
                    c_decl: concat!(
                        "struct ", $cname, " {\n",
                        $( "    ", c_type!($ty), " ", stringify!($field), ";\n", )*
                        "};\n"
                    ),
                    size: ::core::mem::size_of::<$name>(),
                    offsets: &[ $( (stringify!($field), ::core::mem::offset_of!($name, $field)), )* ],
                },
            )*
        ];
    };
}

kernel_args! {
    /// One pass of fused NTT stages (see cuda/ntt.cu). `input` and `output` may alias unless
    /// `bitrev_out` is set; a scaling pointer of 0 means "no factor". `load_mul` (0: none)
    /// multiplies each loaded element by `load_mul` at the same index; `store_sub` (0: none)
    /// subtracts `store_sub` at the element's source index from each stored element (after its
    /// scaling).
    "ntt"::"ntt_pass" => NttPassArgs("ntt_pass_args") {
        input: DevPtr,
        output: DevPtrMut,
        tw: DevPtr,
        load_mul: DevPtr,
        load_c: DevPtr,
        load_lo: DevPtr,
        load_hi: DevPtr,
        store_c: DevPtr,
        store_lo: DevPtr,
        store_hi: DevPtr,
        store_sub: DevPtr,
        log_n: u32,
        s_lo: u32,
        t: u32,
        lg_l: u32,
        dif: u32,
        load_rev: u32,
        bitrev_out: u32,
        lo_bits: u32,
        hb: u32,
    }
    /// The H sequence's fused passes (cuda/ntt.cu): `ntt_fused_mid` runs, on one tile of
    /// `data`, the DIF stages with `tw_first`, the n^-1 g^rev(i) scaling (split tables
    /// `scale_lo`, `scale_hi`) and the DIT stages with `tw_second`, in place; `ntt_fused_top`
    /// runs the last DIT stages (`tw_first`) of the transform in `data`, a pointwise step with
    /// `pa` (and `pb`) chosen by `pointwise` (`FUSED_TOP_H_FROM_C`: (pa pb - x) zinv;
    /// `FUSED_TOP_PRODUCT`: pa x) and the inverse's first DIF stages (`tw_second`), reading
    /// `data` and writing `out`.
    "ntt"::"ntt_fused_mid" | "ntt"::"ntt_fused_top" => NttFusedArgs("ntt_fused_args") {
        data: DevPtrMut,
        out: DevPtrMut,
        pa: DevPtr,
        pb: DevPtr,
        tw_first: DevPtr,
        tw_second: DevPtr,
        scale_lo: DevPtr,
        scale_hi: DevPtr,
        zinv: DevPtr,
        log_n: u32,
        s_lo: u32,
        t: u32,
        lg_l: u32,
        hb: u32,
        lo_bits: u32,
        pointwise: u32,
    }
    /// The per-stage twiddle tables from two split power tables.
    "ntt"::"fr_build_stage_tables" => StageTablesArgs("stage_tables_args") {
        out: DevPtrMut,
        lo: DevPtr,
        hi: DevPtr,
        log_n: u32,
        lo_bits: u32,
    }
    /// a = (a b - c) z^-1, element-wise.
    "ntt"::"fr_h_pointwise" => HPointwiseArgs("h_pointwise_args") {
        a: DevPtrMut,
        b: DevPtr,
        c: DevPtr,
        zinv: DevPtr,
        n: u32,
    }
    /// out = a b, element-wise: C's evaluations of a witness that satisfies its constraints.
    "ntt"::"fr_pointwise_product" => PointwiseProductArgs("pointwise_product_args") {
        out: DevPtrMut,
        a: DevPtr,
        b: DevPtr,
        n: u32,
    }
    /// Signed-digit histogram (pass 0) or counting-sort scatter (pass 1). Window w's digits go
    /// to bucket set w / copies and name point i + (w % copies) * stride (the copies of the
    /// bases precomputed for the fixed-base MSM; copies = 1 otherwise).
    "msm"::"msm_digits" => MsmDigitsArgs("msm_digits_args") {
        scalars: DevPtr,
        counts: DevPtrMut,
        cursor: DevPtrMut,
        vals: DevPtrMut,
        n: u32,
        c: u32,
        nw: u32,
        pass: u32,
        copies: u32,
        stride: u32,
    }
    /// Two-level sort, coarse pass: per tile of SORT_TILE points, the count of each coarse bin
    /// (bucket set, top bits of the bucket) into tile_counts[bin * tiles + tile] (pass 0), or
    /// the scatter of the entries into their bin's slice of the tile (pass 1: fine keys as u16
    /// into `keys`, entries into `vals`, from the scanned counts in `offsets`).
    "msm"::"msm_sort_coarse" => SortCoarseArgs("sort_coarse_args") {
        scalars: DevPtr,
        offsets: DevPtr,
        tile_counts: DevPtrMut,
        keys: DevPtrMut,
        vals: DevPtrMut,
        n: u32,
        c: u32,
        nw: u32,
        copies: u32,
        stride: u32,
        fine_bits: u32,
        coarse: u32,
        bins: u32,
        tiles: u32,
        pass: u32,
    }
    /// Two-level sort, fine pass: one block per coarse bin sorts its entries by fine key with
    /// shared-memory counters, and writes each bucket's size and end.
    "msm"::"msm_sort_fine" => SortFineArgs("sort_fine_args") {
        offsets: DevPtr,
        keys: DevPtr,
        vals_in: DevPtr,
        vals: DevPtrMut,
        counts: DevPtrMut,
        ends: DevPtrMut,
        tiles: u32,
        fine_bits: u32,
        coarse: u32,
        nb: u32,
    }
    /// The scalars of the high windows of a split chunk (`plan::ChunkWindows::Split`): each
    /// scalar s (Montgomery form) as (s >> low_c low_nw) plus the carry out of its `low_nw`
    /// signed digits of `low_c` bits, in Montgomery form into `out`.
    "msm"::"msm_scalars_high" => ScalarsHighArgs("scalars_high_args") {
        scalars: DevPtr,
        out: DevPtrMut,
        n: u32,
        low_c: u32,
        low_nw: u32,
    }
    /// Radix sort, preparation of one MSM of the sort (its `points` scalars at `scalars`, its
    /// points from `point0` of the sort's `n`, its `sets` bucket sets from `set0` of
    /// `all_sets`): each scalar out of Montgomery form into `words` (word k of point i at k * n +
    /// i), the carry into each window as bit w of `carries[i]` (nw <= 32), and the count of
    /// every pass's digits per set added to hist[(pass * all_sets + set) * 2^RADIX_BITS +
    /// digit]. The passes' bits are packed a byte each in `pass_bits`, lowest pass first;
    /// `set_bins` is the sum of 2^bits over the passes.
    "msm"::"msm_radix_prep" => RadixPrepArgs("radix_prep_args") {
        scalars: DevPtr,
        hist: DevPtrMut,
        words: DevPtrMut,
        carries: DevPtrMut,
        n: u32,
        point0: u32,
        points: u32,
        c: u32,
        nw: u32,
        copies: u32,
        sets: u32,
        set0: u32,
        all_sets: u32,
        set_bins: u32,
        passes: u32,
        pass_bits: u32,
    }
    /// Radix sort, where each digit starts in each pass (block s: set s): the exclusive scan of
    /// each pass's digits of `hist` into `starts` (the same layout), and where each set starts
    /// among all entries into set_starts[s] (the total at set_starts[sets]).
    "msm"::"msm_radix_digits" => RadixDigitsArgs("radix_digits_args") {
        hist: DevPtr,
        starts: DevPtrMut,
        set_starts: DevPtrMut,
        sets: u32,
        passes: u32,
        pass_bits: u32,
    }
    /// Radix sort, one pass over bucket set `set` (`msm_radix_scatter`): the stable scatter of
    /// its tiles' entries by the digit of key bits [shift, shift + bits), each digit's run after
    /// its start in `digit_starts` (from `msm_radix_digits`) and the counts of the tiles before
    /// it. `status`: word 0 the tiles' ticket, then a word per tile and digit (1 + tile * 2^bits +
    /// digit) through which tiles publish their counts, zero before the pass; the pass clears
    /// `status_next` so for the next one (digits of `next_bits` bits). `first`: the entries come
    /// from `words` and `carries` (window (set - set0) * copies + tile / tiles_per_window, the
    /// `points` points of the set's MSM from `point0`), else (key, entry) pairs from
    /// `pairs_in`, as many as the set holds (`set_starts`). `last`: entries go to `out` from the
    /// set's start, and each bucket's size is added up in `counts` (zero before the sort); else
    /// (key, entry) pairs go to `out` from 0.
    "msm"::"msm_radix_scatter" => RadixPassArgs("radix_pass_args") {
        words: DevPtr,
        carries: DevPtr,
        pairs_in: DevPtr,
        set_starts: DevPtr,
        digit_starts: DevPtr,
        counts: DevPtrMut,
        status: DevPtrMut,
        status_next: DevPtrMut,
        out: DevPtrMut,
        n: u32,
        point0: u32,
        points: u32,
        c: u32,
        nw: u32,
        nb: u32,
        copies: u32,
        stride: u32,
        set: u32,
        set0: u32,
        tiles: u32,
        tiles_per_window: u32,
        shift: u32,
        bits: u32,
        next_bits: u32,
        first: u32,
        last: u32,
    }
    /// Radix sort, last step: ends[g] = starts[g] + counts[g] for g < m (in place).
    "msm"::"msm_radix_ends" => RadixEndsArgs("radix_ends_args") {
        ends: DevPtrMut,
        counts: DevPtr,
        m: u32,
    }
    /// Fixed-base precomputation: out[i] = 2^c in[i] (affine), i < n; with c = 0 a copy.
    "msm"::"msm_precompute" | "msm_g2"::"msm_g2_precompute" => PrecomputeArgs("precompute_args") {
        input: DevPtr,
        output: DevPtrMut,
        n: u32,
        c: u32,
    }
    /// Exclusive scan, per tile.
    "msm"::"scan_tiles" => ScanTilesArgs("scan_tiles_args") {
        input: DevPtr,
        output: DevPtrMut,
        tile_sums: DevPtrMut,
        m: u32,
    }
    /// Exclusive scan of the tile sums, one block.
    "msm"::"scan_sums" => ScanSumsArgs("scan_sums_args") {
        sums: DevPtrMut,
        count: u32,
    }
    /// Adds the scanned tile sums.
    "msm"::"scan_add" => ScanAddArgs("scan_add_args") {
        output: DevPtrMut,
        tile_sums: DevPtr,
        m: u32,
    }
    /// Batch-affine round: half[g] = ceil(counts[g] / 2) for g < m, half[m] = 0.
    "msm"::"msm_affine_halve" => AffineHalveArgs("affine_halve_args") {
        counts: DevPtr,
        half: DevPtrMut,
        m: u32,
    }
    /// Batch-affine round over m buckets (cuda/msm_affine.cuh): the forward pass writes the
    /// prefix products of the denominators into the output slots and each thread's product; the
    /// backward pass reads the inverses of those products and writes the sums over the prefixes.
    /// `vals` of 0: position k of `src` is point k. Point k's x at `src + k src_stride`, its y
    /// at `src_y + k src_stride` (words); the same for `out`, `out_y` and `out_stride`.
    "msm"::"msm_affine_fwd" | "msm"::"msm_affine_bwd" | "msm_g2"::"msm_g2_affine_fwd" | "msm_g2"::"msm_g2_affine_bwd" => AffineRoundArgs("affine_round_args") {
        src: DevPtr,
        src_y: DevPtr,
        vals: DevPtr,
        ends: DevPtr,
        counts: DevPtr,
        out_ends: DevPtr,
        totals: DevPtrMut,
        inv: DevPtr,
        out: DevPtrMut,
        out_y: DevPtrMut,
        m: u32,
        total: u32,
        per_thread: u32,
        threads: u32,
        src_stride: u32,
        out_stride: u32,
    }
    /// Batched inversion of n field elements (Fp, or Fp2 for G2): product trees per block into
    /// `blk`, one inversion over the `blocks` products, back down into `out`.
    "msm"::"fp_batch_inv_up" | "msm"::"fp_batch_inv_top" | "msm"::"fp_batch_inv_down" | "msm_g2"::"fp2_batch_inv_up" | "msm_g2"::"fp2_batch_inv_top" | "msm_g2"::"fp2_batch_inv_down" => BatchInvArgs("batch_inv_args") {
        values: DevPtr,
        blk: DevPtrMut,
        out: DevPtrMut,
        n: u32,
        blocks: u32,
    }
    /// Lists the buckets above `big` points.
    "msm"::"msm_find_big" => FindBigArgs("find_big_args") {
        counts: DevPtr,
        big_count: DevPtrMut,
        big_list: DevPtrMut,
        m: u32,
        big: u32,
        big_cap: u32,
    }
    /// Balanced bucket accumulation.
    "msm"::"msm_bucket_acc" | "msm_g2"::"msm_g2_bucket_acc" | "msm_g2"::"msm_g2_bucket_acc_inline" => BucketAccArgs("bucket_acc_args") {
        bases: DevPtr,
        vals: DevPtr,
        ends: DevPtr,
        counts: DevPtr,
        buckets: DevPtrMut,
        head: DevPtrMut,
        head_id: DevPtrMut,
        own_id: DevPtrMut,
        m: u32,
        per_thread: u32,
        big: u32,
        threads: u32,
    }
    /// Adds the heads of split buckets to their owners.
    "msm"::"msm_bucket_fixup" | "msm_g2"::"msm_g2_bucket_fixup" => BucketFixupArgs("bucket_fixup_args") {
        head: DevPtr,
        head_id: DevPtr,
        own_id: DevPtr,
        buckets: DevPtrMut,
        threads: u32,
    }
    /// Big buckets: partial sums, many blocks per bucket.
    "msm"::"msm_big_partial" | "msm_g2"::"msm_g2_big_partial" => BigPartialArgs("big_partial_args") {
        bases: DevPtr,
        vals: DevPtr,
        cursor: DevPtr,
        counts: DevPtr,
        big_list: DevPtr,
        blk_bucket: DevPtr,
        blk_part: DevPtr,
        partial: DevPtrMut,
        per_block: u32,
    }
    /// Big buckets: tree of the partial sums.
    "msm"::"msm_big_final" | "msm_g2"::"msm_g2_big_final" => BigFinalArgs("big_final_args") {
        partial: DevPtr,
        first: DevPtr,
        count: DevPtr,
        big_list: DevPtr,
        buckets: DevPtrMut,
    }
    /// Segmented bucket reduction.
    "msm"::"msm_bucket_reduce" | "msm_g2"::"msm_g2_bucket_reduce" => BucketReduceArgs("bucket_reduce_args") {
        buckets: DevPtr,
        counts: DevPtr,
        out: DevPtrMut,
        nw: u32,
        nb: u32,
        seg: u32,
    }
    /// Window combination of the segment results.
    "msm"::"msm_window_combine" | "msm_g2"::"msm_g2_window_combine" => WindowCombineArgs("window_combine_args") {
        segres: DevPtr,
        partial: DevPtrMut,
        segs: u32,
        seg: u32,
        groups: u32,
    }
    /// Per-group tree sum of XYZZ values into Jacobian points.
    "msm"::"xyzz_reduce" | "msm_g2"::"g2_xyzz_reduce" => XyzzReduceArgs("xyzz_reduce_args") {
        input: DevPtr,
        out: DevPtrMut,
        count: u32,
    }
    /// Entries of the ones' list per block of ONES_THREADS threads over bits [bit_lo, bit_hi) of
    /// `bits`, block b's count to counts[b]: with `group` 1, one per set bit (a word a thread);
    /// with `group` 2 or 3, one per aligned pair (bit_lo even; a word a thread) or triple
    /// (bit_lo 0; three words a thread) of bits with a bit set.
    "msm"::"msm_ones_count" => OnesCountArgs("ones_count_args") {
        bits: DevPtr,
        counts: DevPtrMut,
        bit_lo: u32,
        bit_hi: u32,
        sums: u32,
        group: u32,
    }
    /// The ones' list of bits [bit_lo, bit_hi) of `bits`, ascending by group; block b writes
    /// from offsets[b] (the exclusive scan of msm_ones_count's). Each entry is a point index from
    /// the range's first base: a lone one's position less bit_lo, or, for a pair or triple with
    /// two or more bits set, `sums` + the index of its subset sum from the range's first group
    /// (the range's subset sums `sums` points after its first base).
    "msm"::"msm_ones_expand" => OnesExpandArgs("ones_expand_args") {
        bits: DevPtr,
        offsets: DevPtr,
        list: DevPtrMut,
        bit_lo: u32,
        bit_hi: u32,
        sums: u32,
        group: u32,
    }
    /// The ones' subset sums of n bases in aligned groups of `group` (2 or 3; in[n] and after
    /// are infinity): pairs out[j] = in[2j] + in[2j + 1]; triples (a, b, c) out[4j..4j + 4) =
    /// a + b, a + c, b + c, a + b + c (affine).
    "msm"::"msm_ones_sums" | "msm_g2"::"msm_g2_ones_sums" => OnesSumsArgs("ones_sums_args") {
        input: DevPtr,
        output: DevPtrMut,
        n: u32,
        group: u32,
    }
    /// Grid-stride sum of the bases listed in `list` (the scalars equal to one).
    "msm"::"msm_sum_ones" | "msm_g2"::"msm_g2_sum_ones" => SumOnesArgs("sum_ones_args") {
        bases: DevPtr,
        list: DevPtr,
        out: DevPtrMut,
        count: u32,
    }
    /// out[i] = bases[idx[i]] (the tail's bases, contiguous for Pippenger).
    "msm"::"g1_gather" | "msm_g2"::"g2_gather" => GatherArgs("gather_args") {
        bases: DevPtr,
        idx: DevPtr,
        out: DevPtrMut,
        n: u32,
    }
    /// Test kernel: element-wise Fr operation.
    "arith"::"fr_op_test" => FrOpArgs("fr_op_args") {
        a: DevPtr,
        b: DevPtr,
        out: DevPtrMut,
        n: u32,
        op: u32,
    }
    /// Test kernels: element-wise Fp and Fp2 operations.
    "arith"::"fp_op_test" | "arith"::"fp2_op_test" => FpOpArgs("fp_op_args") {
        a: DevPtr,
        b: DevPtr,
        out: DevPtrMut,
        n: u32,
        op: u32,
    }
    /// Test kernels: element-wise G1 and G2 operations.
    "arith"::"g1_op_test" | "arith"::"g2_op_test" => G1OpArgs("g1_op_args") {
        a: DevPtr,
        b: DevPtr,
        out: DevPtrMut,
        n: u32,
        op: u32,
    }
    /// Benchmark kernel: chained Fr multiplications.
    "arith"::"fr_mul_bench" => FrMulBenchArgs("fr_mul_bench_args") {
        data: DevPtrMut,
        iters: u32,
    }
    /// Benchmark kernel: chained Fp multiplications.
    "arith"::"fp_mul_bench" => FpMulBenchArgs("fp_mul_bench_args") {
        data: DevPtrMut,
        iters: u32,
    }
    /// Benchmark helper: bases[i] = bases[i mod period].
    "arith"::"g1_tile_points" | "arith"::"g2_tile_points" => TilePointsArgs("tile_points_args") {
        bases: DevPtrMut,
        period: u32,
        n: u32,
    }
}
