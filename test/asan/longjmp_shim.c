/*-------------------------------------------------------------------------
 * longjmp_shim.c
 *	  Preloaded into a server whose gpuhash.so brings in the ASan runtime
 *	  (test/asan/run.sh): tells ASan about PostgreSQL's ERROR longjmps.
 *
 * ereport(ERROR) leaves instrumented gpuhash frames by siglongjmp from the
 * uninstrumented postgres binary.  ASan's own siglongjmp interceptor is not
 * in effect when the runtime is loaded late (with gpuhash.so, not
 * preloaded), so the abandoned frames' redzones would stay poisoned and the
 * next call at that stack depth would report a false stack-buffer-overflow.
 * These wrappers call __asan_handle_no_return() (found at run time, so the
 * shim itself needs no ASan) before the real jump.  Debian builds
 * PostgreSQL with _FORTIFY_SOURCE, so its jumps are __longjmp_chk.
 *-------------------------------------------------------------------------
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <setjmp.h>
#include <stddef.h>

typedef void (*gh_jump_fn) (sigjmp_buf, int);

static void
gh_unpoison_stack(void)
{
	void		(*handle) (void) = (void (*) (void)) dlsym(RTLD_DEFAULT, "__asan_handle_no_return");

	if (handle != NULL)
		handle();
}

void
siglongjmp(sigjmp_buf env, int val)
{
	static gh_jump_fn real = NULL;

	gh_unpoison_stack();
	if (real == NULL)
		real = (gh_jump_fn) dlsym(RTLD_NEXT, "siglongjmp");
	real(env, val);
	__builtin_unreachable();
}

void
longjmp(jmp_buf env, int val)
{
	static gh_jump_fn real = NULL;

	gh_unpoison_stack();
	if (real == NULL)
		real = (gh_jump_fn) dlsym(RTLD_NEXT, "longjmp");
	real(env, val);
	__builtin_unreachable();
}

void		__longjmp_chk(jmp_buf env, int val);

void
__longjmp_chk(jmp_buf env, int val)
{
	static gh_jump_fn real = NULL;

	gh_unpoison_stack();
	if (real == NULL)
		real = (gh_jump_fn) dlsym(RTLD_NEXT, "__longjmp_chk");
	real(env, val);
	__builtin_unreachable();
}
