/*-------------------------------------------------------------------------
 * gh_hash.h
 *	  The host/device inline qualifier and the 64-bit hash mix shared by the
 *	  multimap (gh_layout.h) and the aggregate (gh_aggregate.h).
 *
 * GH_HD marks a function that nvcc compiles for both the host and the
 * device, and that gcc compiles as a plain static inline, so that the
 * kernels, their CPU twins and src/ run the very same code.  gh_mix64 is
 * where both tables start their probes; src/ may call it too (plain C99).
 *-------------------------------------------------------------------------
 */
#ifndef GH_HASH_H
#define GH_HASH_H

#include <stdint.h>

#ifdef __CUDACC__
#define GH_HD static inline __host__ __device__
#else
#define GH_HD static inline
#endif

/*
 * gh_mix64 is the murmur3 64-bit finalizer: a bijection whose output bits
 * all depend on all input bits, so hashes that differ only in a few bits
 * (PostgreSQL's hash of small integers, say) still start far apart.
 */
GH_HD uint64_t
gh_mix64(uint64_t h)
{
	h ^= h >> 33;
	h *= UINT64_C(0xff51afd7ed558ccd);
	h ^= h >> 33;
	h *= UINT64_C(0xc4ceb9fe1a85ec53);
	h ^= h >> 33;
	return h;
}

#endif /* GH_HASH_H */
