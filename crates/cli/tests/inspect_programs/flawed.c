/* Planted flaws for `rtlab inspect` (crates/cli/tests/inspect_cli.rs): SCHED_FIFO 99, no
 * mlockall, page faults in the loop, allowed on every CPU, and a real-time thread waiting on a
 * pthread condition variable (no priority inheritance). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;

static void *waiter(void *arg) {
    (void)arg;
    pthread_mutex_lock(&lock);
    for (;;) pthread_cond_wait(&cond, &lock);
    return NULL;
}

static void *loop(void *arg) {
    (void)arg;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (;;) {
        /* A fresh mapping each cycle: its first touch faults. */
        char *p = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) abort();
        for (int i = 0; i < (1 << 16); i += 4096) p[i] = 1;
        munmap(p, 1 << 16);
        next.tv_nsec += 1000000;
        if (next.tv_nsec >= 1000000000) { next.tv_nsec -= 1000000000; next.tv_sec++; }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    }
    return NULL;
}

static pthread_t start(void *(*fn)(void *), int prio, const char *name) {
    pthread_attr_t a;
    struct sched_param sp = { .sched_priority = prio };
    pthread_attr_init(&a);
    pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
    pthread_attr_setschedpolicy(&a, SCHED_FIFO);
    pthread_attr_setschedparam(&a, &sp);
    pthread_t t;
    int rc = pthread_create(&t, &a, fn, NULL);
    if (rc) { fprintf(stderr, "pthread_create: %s\n", strerror(rc)); exit(3); }
    pthread_setname_np(t, name);
    return t;
}

int main(void) {
    start(loop, 99, "rt-loop");
    start(waiter, 99, "rt-waiter");
    printf("ready\n");
    fflush(stdout);
    pause();
    return 0;
}
