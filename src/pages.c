/*-------------------------------------------------------------------------
 * pages.c
 *	  Hints to the kernel about the pages of large arrays: huge pages behind
 *	  a join's inner store, and shared memory mapped at once.
 *
 * Both are only hints: where the kernel does not honour one, nothing
 * changes but the speed.  They sit below the join and the GPU service,
 * which both call them, and call nothing of gpuhash.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/mman.h>
#include <unistd.h>

#include "gpuhash.h"

/*
 * gh_advise_huge asks the kernel for huge pages behind a large array that
 * is about to be written: the probe reads the inner records and their arena
 * at addresses far apart, and with 4 kB pages nearly every such read would
 * also miss the TLB; and the first writes of fresh memory fault once a 4 kB
 * page (a parallel build's chunks, join_parallel.c).
 */
void
gh_advise_huge(void *p, Size len)
{
#ifdef MADV_HUGEPAGE
	const uintptr_t huge = 2 * 1024 * 1024;
	uintptr_t	start = TYPEALIGN(huge, (uintptr_t) p);
	uintptr_t	end = TYPEALIGN_DOWN(huge, (uintptr_t) p + len);

	if (end > start)
		(void) madvise((void *) start, end - start, MADV_HUGEPAGE);
#endif
}

/*
 * gh_populate maps the pages of [p, p + bytes), part of a shared memory
 * segment, into this process at once, for writing (write) or reading: the
 * kernel then maps them in one call instead of taking a page fault per 4 kB
 * page at the first touch of each, which is what a large copy into a new
 * segment mostly waits for.  Linux 5.14 and later.  Ranges under 1 MB are
 * left to the faults.
 */
void
gh_populate(const void *p, size_t bytes, bool write)
{
#if defined(__linux__)
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
	uintptr_t	page = (uintptr_t) sysconf(_SC_PAGESIZE);
	uintptr_t	start = (uintptr_t) p & ~(page - 1);
	uintptr_t	end = ((uintptr_t) p + bytes + page - 1) & ~(page - 1);

	if (p != NULL && bytes >= ((size_t) 1 << 20))
		(void) madvise((void *) start, end - start,
					   write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
#endif
}
