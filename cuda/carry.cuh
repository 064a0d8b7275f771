// proofline cuda/carry.cuh: the 32-bit add, subtract and multiply-add steps of multi-word
// arithmetic, with the carry flag, as small functions over which mont.cuh's Karatsuba multiply is
// written once for the device and for the host emulation.
//
// Device: one PTX instruction (or one lo/hi pair) each, `.cc` setting the flag and `c` reading
// it, so a chain of calls is a chain of instructions on the one flag (the pairs of `mad_wide*`
// fuse into IMAD.WIDE.U32(.X) in SASS). Host (no __CUDA_ARCH__: the tests' emulation): the same
// results with the flag in a thread-local variable. A chain never spans a barrier, and the
// emulation switches between a block's threads only at barriers, so one flag per OS thread
// behaves as the device's flag per thread.
#pragma once
#include "common.cuh"

#ifdef __CUDA_ARCH__
// a + b; sets the flag
DEVI u32 add_cc(u32 a, u32 b) {
    u32 r;
    ASM("add.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
// a + b + flag; sets the flag
DEVI u32 addc_cc(u32 a, u32 b) {
    u32 r;
    ASM("addc.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
// a + b + flag
DEVI u32 addc(u32 a, u32 b) {
    u32 r;
    ASM("addc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
// a - b; sets the flag to the borrow
DEVI u32 sub_cc(u32 a, u32 b) {
    u32 r;
    ASM("sub.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
// a - b - flag; sets the flag to the borrow
DEVI u32 subc_cc(u32 a, u32 b) {
    u32 r;
    ASM("subc.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
// a - b - flag
DEVI u32 subc(u32 a, u32 b) {
    u32 r;
    ASM("subc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
// (hi, lo) += a * b, the low word with no carry in; sets the flag to the high word's carry
DEVI void mad_wide_cc(u32& lo, u32& hi, u32 a, u32 b) {
    ASM("mad.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;"
        : "+r"(lo), "+r"(hi)
        : "r"(a), "r"(b));
}
// (hi, lo) += a * b + flag; sets the flag to the high word's carry
DEVI void madc_wide_cc(u32& lo, u32& hi, u32 a, u32 b) {
    ASM("madc.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;"
        : "+r"(lo), "+r"(hi)
        : "r"(a), "r"(b));
}
#else
inline thread_local u32 carry_flag_emu = 0;

DEVI u32 add_cc(u32 a, u32 b) {
    const u64 s = (u64)a + b;
    carry_flag_emu = (u32)(s >> 32);
    return (u32)s;
}
DEVI u32 addc_cc(u32 a, u32 b) {
    const u64 s = (u64)a + b + carry_flag_emu;
    carry_flag_emu = (u32)(s >> 32);
    return (u32)s;
}
DEVI u32 addc(u32 a, u32 b) { return a + b + carry_flag_emu; }
DEVI u32 sub_cc(u32 a, u32 b) {
    carry_flag_emu = a < b ? 1u : 0u;
    return a - b;
}
DEVI u32 subc_cc(u32 a, u32 b) {
    const u64 d = (u64)a - b - carry_flag_emu;
    carry_flag_emu = (u32)(d >> 63);
    return (u32)d;
}
DEVI u32 subc(u32 a, u32 b) { return a - b - carry_flag_emu; }
DEVI void mad_wide_cc(u32& lo, u32& hi, u32 a, u32 b) {
    const u64 p = (u64)a * b;
    const u64 l = (u64)lo + (u32)p;
    const u64 h = (u64)hi + (u32)(p >> 32) + (l >> 32);
    lo = (u32)l;
    hi = (u32)h;
    carry_flag_emu = (u32)(h >> 32);
}
DEVI void madc_wide_cc(u32& lo, u32& hi, u32 a, u32 b) {
    const u64 p = (u64)a * b;
    const u64 l = (u64)lo + (u32)p + carry_flag_emu;
    const u64 h = (u64)hi + (u32)(p >> 32) + (l >> 32);
    lo = (u32)l;
    hi = (u32)h;
    carry_flag_emu = (u32)(h >> 32);
}
#endif
