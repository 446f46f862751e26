/* Exits 300 ms after it starts: an inspection longer than that must end with exit status 2. */
#include <stdio.h>
#include <unistd.h>

int main(void) {
    printf("ready\n");
    fflush(stdout);
    usleep(300000);
    return 0;
}
