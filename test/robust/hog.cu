/*-------------------------------------------------------------------------
 * hog.cu
 *	  Other work holding the GPU's memory, for test/t/005_robust_gpu.pl.
 *
 *   hog LEAVE_MB SECONDS READY_FILE
 *
 * Allocates device memory until no more than LEAVE_MB MiB are free (in
 * chunks of 256 MiB, then smaller ones near the end), writes
 * "held=<MiB> free=<MiB>" to READY_FILE, and holds it for SECONDS or until
 * SIGTERM/SIGINT, then exits (the driver takes the memory back).  Exit 2:
 * no GPU; 3: could not get down to LEAVE_MB.
 *-------------------------------------------------------------------------
 */
#include <cuda_runtime.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile sig_atomic_t stop = 0;

static void
on_signal(int sig)
{
	(void) sig;
	stop = 1;
}

int
main(int argc, char **argv)
{
	const size_t mib = (size_t) 1 << 20;
	size_t		leave,
				free_b,
				total_b,
				held = 0;
	int			secs;
	size_t		chunk = 256 * mib;
	FILE	   *f;

	if (argc != 4)
	{
		fprintf(stderr, "usage: %s LEAVE_MB SECONDS READY_FILE\n", argv[0]);
		return 1;
	}
	leave = (size_t) atol(argv[1]) * mib;
	secs = atoi(argv[2]);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	if (cudaFree(NULL) != cudaSuccess || cudaMemGetInfo(&free_b, &total_b) != cudaSuccess)
	{
		fprintf(stderr, "hog: no usable GPU\n");
		return 2;
	}
	while (free_b > leave && chunk >= mib)
	{
		void	   *p;

		if (free_b - leave < chunk)
		{
			chunk /= 2;
			continue;
		}
		if (cudaMalloc(&p, chunk) != cudaSuccess)
		{
			cudaGetLastError();
			chunk /= 2;
		}
		else
			held += chunk;
		if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess)
			return 3;
	}
	if (free_b > leave + 2 * mib)
	{
		fprintf(stderr, "hog: %zu MiB still free, wanted %zu\n", free_b / mib, leave / mib);
		return 3;
	}
	f = fopen(argv[3], "w");
	if (f == NULL)
		return 1;
	fprintf(f, "held=%zu free=%zu total=%zu\n", held / mib, free_b / mib, total_b / mib);
	fclose(f);
	for (int i = 0; i < secs * 10 && !stop; i++)
		usleep(100000);
	return 0;
}
