// bench/context/context_bench.cu - how long N processes that start at once
// take to create their CUDA contexts (what N parallel workers of a GPU join
// pay).  Prints, for each N, the slowest and the median creation time.
//
//   nvcc -O2 -o context_bench context_bench.cu && ./context_bench 1 2 4 8 16
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <algorithm>
#include <vector>

static double now_ms()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    for (int a = 1; a < argc; a++)
    {
        int n = atoi(argv[a]);
        std::vector<int> fds(n);
        double t0 = now_ms();
        for (int i = 0; i < n; i++)
        {
            int p[2];
            if (pipe(p) != 0) return 1;
            pid_t pid = fork();
            if (pid == 0)
            {
                // the child never touched CUDA before the fork, as a backend
                double s = now_ms();
                cudaError_t e = cudaFree(0);
                double d = now_ms() - s, end = now_ms() - t0;
                double out[2] = {e == cudaSuccess ? d : -1, end};
                if (write(p[1], out, sizeof(out)) != sizeof(out)) _exit(1);
                _exit(0);
            }
            close(p[1]);
            fds[i] = p[0];
        }
        std::vector<double> own, done;
        for (int i = 0; i < n; i++)
        {
            double in[2];
            if (read(fds[i], in, sizeof(in)) == sizeof(in)) { own.push_back(in[0]); done.push_back(in[1]); }
            close(fds[i]);
        }
        while (wait(NULL) > 0) ;
        std::sort(own.begin(), own.end());
        std::sort(done.begin(), done.end());
        printf("| %d | %.1f | %.1f | %.1f |\n", n, own[own.size() / 2], own.back(), done.back());
    }
    return 0;
}
