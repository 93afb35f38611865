/*
 * The native Slurm shim: `sbatch`, `squeue`, ... as one small program that hands its command
 * to Phalanx's command server (phalanx/commandserver) and exits as the command did.
 *
 * Compiled by `phalanx shims DIR` into DIR/.phalanx-shim; DIR/sbatch etc. are links to it and
 * the command is the name it was run by. It starts in well under a millisecond, where a Python
 * process takes 10-25 ms: tools run these commands thousands of times.
 *
 * It sends argv, the environment, its working directory (a descriptor) and its standard
 * input, output and error (SCM_RIGHTS) over the server's Unix socket, forwards the signals it
 * gets, and exits with the status the server reports. Whenever the server cannot run the
 * command (none listening, PHALANX_URL set, another user's server) it runs the Python shim
 * DIR/.python/<cmd> instead, which does the same work in a process of its own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define SOCKET_NAME "commands.sock"
#define STATE_SUFFIX "/.local/state/phalanx"

static const char *const served[] = {
    "sbatch", "scancel", "squeue", "sacct", "sinfo", "scontrol", "sprio", "sshare", "sacctmgr",
    NULL,
};

static int server = -1;
/* The last signal forwarded, sent again each second until the command's answer comes. */
static volatile sig_atomic_t last_forwarded = 0;

/* The Python shim for this command: DIR/.python/<cmd>, DIR being where this binary is. */
static void fallback(const char *command, char **argv) {
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        fprintf(stderr, "%s: cannot find the Phalanx shims' directory\n", command);
        exit(1);
    }
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash == NULL) {
        exit(1);
    }
    *slash = '\0';
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/.python/%s", self, command) >= (int)sizeof path) {
        exit(1);
    }
    if (server >= 0) {
        close(server);
    }
    execv(path, argv);
    fprintf(stderr, "%s: cannot run %s: %s\n", command, path, strerror(errno));
    exit(1);
}

/* Where the server listens: $PHALANX_STATE_DIR or ~/.local/state/phalanx, as the Python
 * clients look for the controller (phalanx/client/address.py). */
static int socket_path(char *out, size_t size) {
    const char *dir = getenv("PHALANX_STATE_DIR");
    const char *home = getenv("HOME");
    if (home == NULL || *home == '\0') {
        struct passwd *pw = getpwuid(getuid());
        home = pw != NULL ? pw->pw_dir : "";
    }
    int n;
    if (dir != NULL && *dir != '\0') {
        if (dir[0] == '~' && (dir[1] == '/' || dir[1] == '\0')) {
            n = snprintf(out, size, "%s%s/%s", home, dir + 1, SOCKET_NAME);
        } else {
            n = snprintf(out, size, "%s/%s", dir, SOCKET_NAME);
        }
    } else {
        n = snprintf(out, size, "%s%s/%s", home, STATE_SUFFIX, SOCKET_NAME);
    }
    return n > 0 && (size_t)n < size ? 0 : -1;
}

struct buffer {
    char *data;
    size_t length, capacity;
};

static void append(struct buffer *b, const char *text, size_t length) {
    if (b->length + length > b->capacity) {
        size_t capacity = b->capacity ? b->capacity : 4096;
        while (capacity < b->length + length) {
            capacity *= 2;
        }
        char *data = realloc(b->data, capacity);
        if (data == NULL) {
            perror("phalanx shim");
            exit(1);
        }
        b->data = data;
        b->capacity = capacity;
    }
    memcpy(b->data + b->length, text, length);
    b->length += length;
}

static void append_word(struct buffer *b, const char *word) { append(b, word, strlen(word) + 1); }

static void append_count(struct buffer *b, long count) {
    char text[32];
    snprintf(text, sizeof text, "%ld", count);
    append_word(b, text);
}

static int write_all(int fd, const char *data, size_t length) {
    while (length > 0) {
        ssize_t n = write(fd, data, length);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        data += n;
        length -= (size_t)n;
    }
    return 0;
}

/* A signal for the command, not for this process: the server's child gets it. */
static void forward(int number) {
    char line[24];
    int n = snprintf(line, sizeof line, "signal %d\n", number);
    int saved = errno;
    if (server >= 0 && n > 0) {
        (void)!write(server, line, (size_t)n);
    }
    last_forwarded = number;
    errno = saved;
}

/* A descriptor to pass for 0, 1 or 2: itself, or /dev/null when this process has none. */
static int standard(int fd) {
    if (fcntl(fd, F_GETFD) >= 0) {
        return fd;
    }
    return open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
}

int main(int argc, char **argv) {
    extern char **environ;
    const char *command = strrchr(argv[0], '/');
    command = command ? command + 1 : argv[0];
    int known = 0;
    for (const char *const *name = served; *name; name++) {
        known |= strcmp(*name, command) == 0;
    }
    const char *url = getenv("PHALANX_URL");
    if (!known || (url != NULL && *url != '\0')) {
        fallback(command, argv);
    }
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (socket_path(address.sun_path, sizeof address.sun_path) != 0) {
        fallback(command, argv);
    }
    server = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (server < 0 || connect(server, (struct sockaddr *)&address, sizeof address) != 0) {
        fallback(command, argv);
    }
    int cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (cwd < 0) {
        fallback(command, argv);
    }

    struct buffer body = {0};
    append_word(&body, command);
    append_count(&body, argc);
    for (int i = 0; i < argc; i++) {
        append_word(&body, argv[i]);
    }
    long envc = 0;
    for (char **e = environ; *e; e++) {
        envc++;
    }
    append_count(&body, envc);
    for (char **e = environ; *e; e++) {
        append_word(&body, *e);
    }

    char header[13];
    snprintf(header, sizeof header, "PHX1%08zx", body.length);
    int fds[4] = {standard(0), standard(1), standard(2), cwd};
    union {
        char buf[CMSG_SPACE(sizeof fds)];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof control);
    struct iovec iov = {.iov_base = header, .iov_len = 12};
    struct msghdr message = {
        .msg_iov = &iov,
        .msg_iovlen = 1,
        .msg_control = control.buf,
        .msg_controllen = sizeof control.buf,
    };
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&message);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof fds);
    memcpy(CMSG_DATA(cmsg), fds, sizeof fds);

    /* Until the server has the request, a signal kills this shim as it would kill sbatch. */
    ssize_t sent;
    do {
        sent = sendmsg(server, &message, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    if (sent < 0) {
        fallback(command, argv);
    }
    if (sent < 12 && write_all(server, header + sent, (size_t)(12 - sent)) != 0) {
        fallback(command, argv);
    }
    /* A "fallback" answer comes before the server reads the body: do not block on it. */
    signal(SIGPIPE, SIG_IGN);
    if (write_all(server, body.data, body.length) != 0 && errno != EPIPE) {
        fallback(command, argv);
    }

    struct sigaction action = {.sa_handler = forward};
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof forwarded / sizeof *forwarded; i++) {
        sigaction(forwarded[i], &action, NULL);
    }

    char line[64];
    size_t have = 0;
    struct pollfd answer = {.fd = server, .events = POLLIN};
    while (have < sizeof line - 1) {
        /* Until the answer comes, a forwarded signal goes again each second as "resend N",
           which the worker acts on only if it has not had that signal yet: a notice the
           worker missed costs a second, not a command that never ends. */
        int ready = poll(&answer, 1, last_forwarded ? 1000 : -1);
        if (ready < 0 && errno == EINTR) {
            continue;
        }
        if (ready == 0) {
            char again[24];
            int length = snprintf(again, sizeof again, "resend %d\n", (int)last_forwarded);
            if (length > 0) {
                (void)!write(server, again, (size_t)length);
            }
            continue;
        }
        ssize_t n = read(server, line + have, sizeof line - 1 - have);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        have += (size_t)n;
        if (memchr(line, '\n', have) != NULL) {
            break;
        }
    }
    line[have] = '\0';
    int value;
    if (strncmp(line, "fallback\n", 9) == 0) {
        fallback(command, argv);
    }
    if (sscanf(line, "exit %d", &value) == 1) {
        return value & 0xff;
    }
    if (sscanf(line, "signal %d", &value) == 1) {
        signal(value, SIG_DFL);
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, value);
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        raise(value);
        return 128 + value;
    }
    fprintf(stderr, "%s: the Phalanx command server ended without an answer\n", command);
    return 1;
}
