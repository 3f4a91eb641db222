/* dpu_sim_model.c -- the stand-in host library's DPUs on the DPU model
 * (included by dpu_sim_host.c when EDSL_SIM_MODEL is defined; generated
 * stand-ins give EDSL_SIM_PYTHON in edsl_sim_model.h).
 *
 * A DPU program is then the file `dpu-upmem-dpurte-clang` wrote for the model
 * (edsl.sdk_model build): its C source and flags. dpu_alloc starts the
 * model (`python -m edsl.sdk_model serve`), which compiles the program
 * at dpu_load, keeps each DPU's variables, and runs a DPU's `main` at
 * dpu_launch with its tasklets checked (transfers, races between tasklets,
 * faults at the `.c` line). Each DPU's MRAM stays this process's memory
 * file, which the model maps while the DPU runs: the heap's transfers are
 * this library's own; a variable's go to the model.
 *
 * Requests and replies over two pipes, little-endian 64-bit words: a request
 * is {op, dpu, a, b, c, payload bytes} then the payload, a reply {status
 * (a dpu_error_t), value, value2, payload bytes} then the payload. */
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include "edsl_sim_model.h"

extern char **environ;

enum { MODEL_LOAD = 1, MODEL_SYMBOL, MODEL_WRITE, MODEL_READ, MODEL_LAUNCH, MODEL_LOG };

struct edsl_sim_model {
    pid_t pid;
    int to, from;                      /* the request and reply pipes */
};

/* All `n` bytes of `data` written to `fd` (`out`) or read from it; 0 if the pipe closed. */
static int move_all(int fd, void *data, size_t n, int out) {
    uint8_t *p = data;
    while (n) {
        ssize_t k = out ? write(fd, p, n) : read(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return 0;
        p += k, n -= (size_t)k;
    }
    return 1;
}

static int write_all(int fd, const void *data, size_t n) { return move_all(fd, (void *)data, n, 1); }
static int read_all(int fd, void *data, size_t n) { return move_all(fd, data, n, 0); }

/* Start the model for a system whose DPUs' MRAM files are open (it inherits them). */
static int model_start(struct edsl_sim_model *m) {
    int to[2], from[2];
    if (pipe(to) != 0 || pipe(from) != 0)
        return 0;
    char in[16], out[16];
    snprintf(in, sizeof in, "%d", to[0]);
    snprintf(out, sizeof out, "%d", from[1]);
    const char *python = getenv("EDSL_SIM_PYTHON");
    char *argv[] = {(char *)(python && *python ? python : EDSL_SIM_PYTHON), "-m", "edsl.sdk_model", "serve",
                    in, out, NULL};
    fcntl(to[1], F_SETFD, FD_CLOEXEC);
    fcntl(from[0], F_SETFD, FD_CLOEXEC);
    int err = posix_spawn(&m->pid, argv[0], NULL, NULL, argv, environ);
    close(to[0]);
    close(from[1]);
    if (err != 0) {
        fprintf(stderr, "[dpu sim] cannot start the DPU model (%s): %s\n", argv[0], strerror(err));
        close(to[1]);
        close(from[0]);
        return 0;
    }
    m->to = to[1], m->from = from[0];
    signal(SIGPIPE, SIG_IGN);          /* (a model that ended is an error of the call, not the end of the host) */
    return 1;
}

static void model_stop(struct edsl_sim_model *m) {
    close(m->to);
    close(m->from);
    waitpid(m->pid, NULL, 0);
}

/* Send a request; the reply's words in `reply`. 0 if the model is gone. */
static int model_ask(struct edsl_sim_model *m, const int64_t words[6], const void *out1, size_t n1,
                     const void *out2, size_t n2, int64_t reply[4]) {
    if (!write_all(m->to, words, 6 * sizeof *words) || !write_all(m->to, out1, n1) || !write_all(m->to, out2, n2)
        || !read_all(m->from, reply, 4 * sizeof *reply)) {
        fprintf(stderr, "[dpu sim] the DPU model ended\n");
        return 0;
    }
    return 1;
}

/* One request; the reply's words in `reply`, its payload in `in` (at most
 * `cap` bytes: the rest is dropped). DPU_ERR_SYSTEM if the model is gone. */
static dpu_error_t model_call(struct edsl_sim_model *m, int64_t op, int64_t dpu, int64_t a, int64_t b, int64_t c,
                              const void *out1, size_t n1, const void *out2, size_t n2, int64_t reply[4],
                              void *in, size_t cap) {
    int64_t words[6] = {op, dpu, a, b, c, (int64_t)(n1 + n2)};
    if (!model_ask(m, words, out1, n1, out2, n2, reply))
        return DPU_ERR_SYSTEM;
    size_t n = (size_t)reply[3], kept = n < cap ? n : cap;
    if (!read_all(m->from, in, kept))
        return DPU_ERR_SYSTEM;
    for (uint8_t sink[256]; n > kept;) {
        size_t k = n - kept < sizeof sink ? n - kept : sizeof sink;
        if (!read_all(m->from, sink, k))
            return DPU_ERR_SYSTEM;
        kept += k;
    }
    return (dpu_error_t)reply[0];
}

/* A reply's message (its payload) to standard error, after `what`. */
static dpu_error_t model_said(struct edsl_sim_model *m, const char *what, int64_t op, int64_t dpu, int64_t a,
                              int64_t b, const void *out, size_t n) {
    int64_t reply[4];
    char message[8192] = "";
    dpu_error_t err = model_call(m, op, dpu, a, b, 0, out, n, NULL, 0, reply, message, sizeof message - 1);
    if (err != DPU_OK && err != DPU_ERR_SYSTEM && message[0])
        fprintf(stderr, "[dpu sim] %s: %s\n", what, message);
    return err;
}

static dpu_error_t model_load(struct edsl_sim_model *m, uint32_t index, const char *path) {
    char what[64];
    snprintf(what, sizeof what, "dpu_load on DPU %u", (unsigned)index);
    return model_said(m, what, MODEL_LOAD, index, 0, 0, path, strlen(path));
}

/* The size of variable `symbol` of a DPU's program, and whether it is in MRAM. */
static dpu_error_t model_symbol(struct edsl_sim_model *m, uint32_t index, const char *symbol, size_t *size,
                                int *in_mram) {
    int64_t reply[4];
    dpu_error_t err = model_call(m, MODEL_SYMBOL, index, 0, 0, 0, symbol, strlen(symbol), NULL, 0, reply, NULL, 0);
    *size = (size_t)reply[1], *in_mram = (int)reply[2];
    return err;
}

static dpu_error_t model_copy(struct edsl_sim_model *m, uint32_t index, dpu_xfer_t xfer, const char *symbol,
                              uint32_t offset, void *buffer, size_t length) {
    int64_t reply[4];
    size_t name = strlen(symbol);
    if (xfer == DPU_XFER_TO_DPU)
        return model_call(m, MODEL_WRITE, index, offset, (int64_t)length, (int64_t)name, symbol, name, buffer,
                          length, reply, NULL, 0);
    return model_call(m, MODEL_READ, index, offset, (int64_t)length, (int64_t)name, symbol, name, NULL, 0, reply,
                      buffer, length);
}

/* Run a DPU whose MRAM is memory file `mram_file` (its heap after `heap_offset` bytes). */
static dpu_error_t model_launch(struct edsl_sim_model *m, uint32_t index, int mram_file, size_t heap_offset) {
    char what[64];
    snprintf(what, sizeof what, "DPU %u", (unsigned)index);
    return model_said(m, what, MODEL_LAUNCH, index, mram_file, (int64_t)heap_offset, NULL, 0);
}

/* A DPU's printf output of its last launch, to `stream`. */
static dpu_error_t model_log(struct edsl_sim_model *m, uint32_t index, FILE *stream) {
    int64_t words[6] = {MODEL_LOG, index, 0, 0, 0, 0}, reply[4];
    if (!model_ask(m, words, NULL, 0, NULL, 0, reply))
        return DPU_ERR_SYSTEM;
    char *text = malloc((size_t)reply[3] + 1);
    if (!text || !read_all(m->from, text, (size_t)reply[3])) {
        free(text);
        return DPU_ERR_SYSTEM;
    }
    fwrite(text, 1, (size_t)reply[3], stream);
    free(text);
    return (dpu_error_t)reply[0];
}
