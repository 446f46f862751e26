/* Set up for real time as talk 002 says (crates/cli/tests/inspect_cli.rs): SCHED_FIFO 49,
 * mlockall, a pre-faulted stack, pinned to one CPU (the argument), and a real-time thread that
 * waits only on a priority-inheriting mutex. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t pi_lock;
static int cpu;

static void prefault_stack(void) {
    volatile char buf[64 * 1024];
    memset((char *)buf, 0, sizeof buf);
}

static void *loop(void *arg) {
    (void)arg;
    prefault_stack();
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (;;) {
        next.tv_nsec += 1000000;
        if (next.tv_nsec >= 1000000000) { next.tv_nsec -= 1000000000; next.tv_sec++; }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    }
    return NULL;
}

static void *locker(void *arg) {
    (void)arg;
    prefault_stack();
    pthread_mutex_lock(&pi_lock); /* held by main: blocks in FUTEX_LOCK_PI */
    pthread_mutex_unlock(&pi_lock);
    return NULL;
}

static void start(void *(*fn)(void *), int prio, const char *name) {
    pthread_attr_t a;
    struct sched_param sp = { .sched_priority = prio };
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_attr_init(&a);
    pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
    pthread_attr_setschedpolicy(&a, SCHED_FIFO);
    pthread_attr_setschedparam(&a, &sp);
    pthread_attr_setaffinity_np(&a, sizeof set, &set);
    pthread_t t;
    int rc = pthread_create(&t, &a, fn, NULL);
    if (rc) { fprintf(stderr, "pthread_create: %s\n", strerror(rc)); exit(3); }
    pthread_setname_np(t, name);
}

int main(int argc, char **argv) {
    cpu = argc > 1 ? atoi(argv[1]) : 0;
    if (mlockall(MCL_CURRENT | MCL_FUTURE)) { perror("mlockall"); return 3; }
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT);
    pthread_mutex_init(&pi_lock, &ma);
    pthread_mutex_lock(&pi_lock);
    start(loop, 49, "rt-loop");
    start(locker, 48, "rt-locker");
    printf("ready\n");
    fflush(stdout);
    pause();
    return 0;
}
