/* dpu_sim_host.c -- this project's stand-in for the UPMEM host library: runs
 * DPU programs built as shared objects (see dpu.h and dpu_sim_rt.c). A DPU's
 * MRAM holds the program's MRAM variables (its printf buffer) and then the
 * heap (DPU_MRAM_HEAP_POINTER), as on the hardware.
 *
 * A DPU's pointers are 32-bit, and DPU programs keep MRAM addresses in 32-bit
 * integers (`(uint32_t)DPU_MRAM_HEAP_POINTER`). So each DPU's MRAM is a
 * memory file, mapped for the host's transfers anywhere, and for the DPU's
 * run at one window below 4 GiB (EDSL_SIM_MRAM_WINDOW), where the DPUs of a
 * launch, which run one after another, map theirs in turn. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000      /* (Linux 4.17; older kernels take it as a hint, checked below) */
#endif

/* Where the running DPU's MRAM is (any address below 4 GiB would do). */
#define EDSL_SIM_MRAM_WINDOW ((uintptr_t)0x10000000u)

#include "dpu.h"
#include "dpu_abi.h"
#include "dpu_log.h"

#ifdef EDSL_SIM_MODEL
#include <fcntl.h>
#include "dpu_sim_model.c"
#endif

/* (dpu_sim_rt.c takes addresses below the MRAM's size as MRAM addresses) */
_Static_assert(EDSL_SIM_MRAM_WINDOW >= EDSL_MRAM_BYTES, "the MRAM window lies above the MRAM's size");

typedef int (*edsl_sim_run_fn)(int (*)(void), uint8_t *, size_t, size_t, char *, size_t);
typedef int (*edsl_sim_log_fn)(const uint8_t **, uint32_t *, int *);
typedef void (*edsl_sim_variables_fn)(uint8_t **, uint8_t **);
typedef void (*edsl_sim_counts_fn)(const int64_t **, unsigned int *, const uint64_t **, unsigned int *);

/* A DPU as `struct dpu_set_t`'s `dpu` names it. */
struct dpu_t {
    struct edsl_sim_system *system;
    uint32_t index;
};

struct edsl_sim_dpu {
    struct dpu_t self;
    int loaded;                /* whether dpu_load gave it a program */
    void *handle;              /* this DPU's private copy of the program (not on the model) */
    int (*entry)(void);
    edsl_sim_run_fn run;
    edsl_sim_log_fn log;
    edsl_sim_variables_fn variables;   /* where its MRAM variables are */
    edsl_sim_counts_fn counts;         /* its last run's counts */
    uint8_t *mram;             /* its MRAM, as the host sees it */
    int mram_file;             /* ... a memory file, mapped at the window while it runs */
    size_t heap_offset;        /* the program's MRAM variables: the heap starts after them */
    void *xfer;                /* buffer set by dpu_prepare_xfer */
    char program[4096];        /* the program file dpu_load loaded (its full path) */
    int faulted;
};

struct edsl_sim_system {
    uint32_t nr_dpus;
    struct edsl_sim_dpu *dpus;
#ifdef EDSL_SIM_MODEL
    struct edsl_sim_model model;       /* what runs the DPUs' programs */
#endif
};

uint32_t edsl_sim_set_size(struct dpu_set_t set) { return set.count; }

struct dpu_set_t edsl_sim_set_dpu(struct dpu_set_t set, uint32_t i) {
    struct dpu_set_t one = { set.system, set.first + i, 1, &set.system->dpus[set.first + i].self };
    return one;
}

char *dpu_error_to_string(dpu_error_t status) {
    static const char *names[] = {
        "success", "internal error", "system error", "allocation error", "invalid DPU set",
        "invalid DPU program file", "no program loaded", "unknown symbol",
        "invalid symbol access", "invalid MRAM access", "invalid WRAM access",
        "transfer already set", "DPU fault", "invalid launch policy", "invalid log format",
        "missing log context", "log buffer too small",
    };
    const char *text = (unsigned)status < sizeof names / sizeof names[0] ? names[status] : "unknown error";
    char *copy = malloc(strlen(text) + 1);
    if (copy)
        strcpy(copy, text);
    return copy;
}

/* The window the running DPU's MRAM is mapped at, reserved once. */
static int reserve_window(void) {
    static int reserved;
    if (reserved)
        return 1;
    void *at = mmap((void *)EDSL_SIM_MRAM_WINDOW, (size_t)EDSL_MRAM_BYTES, PROT_NONE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (at != (void *)EDSL_SIM_MRAM_WINDOW) {
        fprintf(stderr, "[dpu sim] cannot reserve the %d MiB at %#lx where a DPU's MRAM runs: %s\n",
                EDSL_MRAM_BYTES >> 20, (unsigned long)EDSL_SIM_MRAM_WINDOW,
                at == MAP_FAILED ? strerror(errno) : "the address is taken");
        if (at != MAP_FAILED)
            munmap(at, (size_t)EDSL_MRAM_BYTES);
        return 0;
    }
    reserved = 1;
    return 1;
}

/* One DPU's MRAM: a zeroed memory file (pages taken on first touch), and the
 * host's view of it. (The DPU model, a process of its own, inherits it.) */
static int new_mram(struct edsl_sim_dpu *dpu) {
#ifdef EDSL_SIM_MODEL
    dpu->mram_file = memfd_create("edsl-dpu-mram", 0);
#else
    dpu->mram_file = memfd_create("edsl-dpu-mram", MFD_CLOEXEC);
#endif
    if (dpu->mram_file < 0 || ftruncate(dpu->mram_file, (off_t)EDSL_MRAM_BYTES) != 0)
        return 0;
    void *view = mmap(NULL, (size_t)EDSL_MRAM_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, dpu->mram_file, 0);
    if (view == MAP_FAILED)
        return 0;
    dpu->mram = view;
    return 1;
}

/* The host's view of `p`, an address in the window (as the DPU saw it), else `p`. */
static const uint8_t *host_view(const struct edsl_sim_dpu *dpu, const uint8_t *p) {
    uintptr_t a = (uintptr_t)p;
    if (a >= EDSL_SIM_MRAM_WINDOW && a < EDSL_SIM_MRAM_WINDOW + (uintptr_t)EDSL_MRAM_BYTES)
        return dpu->mram + (a - EDSL_SIM_MRAM_WINDOW);
    return p;
}

dpu_error_t dpu_alloc(uint32_t nr_dpus, const char *profile, struct dpu_set_t *dpu_set) {
    (void)profile;
    if (nr_dpus == DPU_ALLOCATE_ALL)
        nr_dpus = 64;
    if (nr_dpus == 0 || dpu_set == NULL)
        return DPU_ERR_ALLOCATION;
    struct edsl_sim_system *sys = calloc(1, sizeof *sys);
    if (!sys)
        return DPU_ERR_ALLOCATION;
    sys->nr_dpus = nr_dpus;
    sys->dpus = calloc(nr_dpus, sizeof *sys->dpus);
    if (!sys->dpus || !reserve_window()) {
        free(sys->dpus);
        free(sys);
        return DPU_ERR_ALLOCATION;
    }
    for (uint32_t i = 0; i < nr_dpus; i++) {
        sys->dpus[i].self = (struct dpu_t){sys, i};
        sys->dpus[i].mram_file = -1;
        if (!new_mram(&sys->dpus[i])) {
            fprintf(stderr, "[dpu sim] cannot make DPU %u's MRAM: %s\n", (unsigned)i, strerror(errno));
            return DPU_ERR_ALLOCATION;
        }
    }
#ifdef EDSL_SIM_MODEL
    if (!model_start(&sys->model))
        return DPU_ERR_ALLOCATION;
#endif
    dpu_set->system = sys;
    dpu_set->first = 0;
    dpu_set->count = nr_dpus;
    dpu_set->dpu = nr_dpus == 1 ? &sys->dpus[0].self : NULL;
    return DPU_OK;
}

dpu_error_t dpu_free(struct dpu_set_t set) {
    struct edsl_sim_system *sys = set.system;
    if (!sys || set.first != 0 || set.count != sys->nr_dpus)
        return DPU_ERR_INVALID_DPU_SET;
#ifdef EDSL_SIM_MODEL
    model_stop(&sys->model);
#endif
    for (uint32_t i = 0; i < sys->nr_dpus; i++) {
        if (sys->dpus[i].handle)
            dlclose(sys->dpus[i].handle);
        munmap(sys->dpus[i].mram, (size_t)EDSL_MRAM_BYTES);
        close(sys->dpus[i].mram_file);
    }
    free(sys->dpus);
    free(sys);
    return DPU_OK;
}

dpu_error_t dpu_get_nr_dpus(struct dpu_set_t set, uint32_t *nr_dpus) {
    *nr_dpus = set.count;
    return DPU_OK;
}

/* A private copy of the program file: dlopen of one path shares its globals. */
static void *open_copy(const char *path) {
    FILE *in = fopen(path, "rb");
    if (!in)
        return NULL;
    const char *dir = getenv("TMPDIR");
    char name[4096];
    snprintf(name, sizeof name, "%s/edsl-dpu-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(name);
    if (fd < 0) {
        fclose(in);
        return NULL;
    }
    char buf[1 << 16];
    size_t n;
    int ok = 1;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        if (write(fd, buf, n) != (ssize_t)n)
            ok = 0;
    fclose(in);
    close(fd);
    void *handle = ok ? dlopen(name, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!handle && ok)
        fprintf(stderr, "[dpu sim] cannot load %s: %s\n", path, dlerror());
    unlink(name);
    return handle;
}

dpu_error_t dpu_load(struct dpu_set_t set, const char *binary_path, struct dpu_program_t **program) {
    if (program)
        *program = NULL;
    for (uint32_t i = 0; i < set.count; i++) {
        struct edsl_sim_dpu *dpu = &set.system->dpus[set.first + i];
        dpu->loaded = 0;
        if (!realpath(binary_path, dpu->program))
            snprintf(dpu->program, sizeof dpu->program, "%s", binary_path);
#ifdef EDSL_SIM_MODEL
        dpu_error_t err = model_load(&set.system->model, set.first + i, dpu->program);
        if (err != DPU_OK)
            return err;
        dpu->heap_offset = 0;          /* (the model keeps the printf buffer and the MRAM variables) */
        dpu->loaded = 1;
        dpu->faulted = 0;
        continue;
#endif
        if (dpu->handle)
            dlclose(dpu->handle);
        dpu->handle = open_copy(binary_path);
        if (!dpu->handle)
            return DPU_ERR_ELF_INVALID_FILE;
        dpu->entry = (int (*)(void))dlsym(dpu->handle, "main");
        dpu->run = (edsl_sim_run_fn)dlsym(dpu->handle, "edsl_sim_run");
        dpu->log = (edsl_sim_log_fn)dlsym(dpu->handle, "edsl_sim_log");
        dpu->variables = (edsl_sim_variables_fn)dlsym(dpu->handle, "edsl_sim_mram_variables");
        dpu->counts = (edsl_sim_counts_fn)dlsym(dpu->handle, "edsl_sim_counts");
        if (!dpu->entry || !dpu->run || !dpu->log)
            return DPU_ERR_ELF_INVALID_FILE;
        /* The MRAM the program's printf buffer takes (STDOUT_BUFFER_INIT). */
        const unsigned int *stdout_bytes = dlsym(dpu->handle, "__stdout_buffer_size");
        dpu->heap_offset = stdout_bytes ? EDSL_ALIGN_UP((size_t)*stdout_bytes) : 0;
        if (dpu->heap_offset >= (size_t)EDSL_MRAM_BYTES) {
            fprintf(stderr, "[dpu sim] %s: its printf buffer of %u bytes does not fit the MRAM\n", binary_path,
                    *stdout_bytes);
            return DPU_ERR_ELF_INVALID_FILE;
        }
        dpu->faulted = 0;
        dpu->loaded = 1;
    }
    return DPU_OK;
}

/* The host address of `symbol` + `offset` on one DPU (NULL: a variable the
 * DPU model keeps), after the host library's checks of the transfer. */
static dpu_error_t locate(struct edsl_sim_dpu *dpu, const char *symbol, uint32_t offset, size_t length,
                          uint8_t **where) {
    if (!dpu->loaded)
        return DPU_ERR_NO_PROGRAM_LOADED;
    if (strcmp(symbol, DPU_MRAM_HEAP_POINTER_NAME) == 0) {
        if (offset % EDSL_DMA_ALIGN || length % EDSL_DMA_ALIGN)
            return DPU_ERR_INVALID_MRAM_ACCESS;
        if ((size_t)offset + length > (size_t)EDSL_MRAM_BYTES - dpu->heap_offset)
            return DPU_ERR_INVALID_MRAM_ACCESS;
        *where = dpu->mram + dpu->heap_offset + offset;
        return DPU_OK;
    }
    size_t size;
    int in_mram;
#ifdef EDSL_SIM_MODEL
    dpu_error_t err = model_symbol(&dpu->self.system->model, dpu->self.index, symbol, &size, &in_mram);
    if (err != DPU_OK)
        return err;
    uint8_t *address = NULL;
#else
    uint8_t *address = dlsym(dpu->handle, symbol);
    if (!address)
        return DPU_ERR_UNKNOWN_SYMBOL;
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (!dladdr1(address, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym || !info.dli_sname
        || strcmp(info.dli_sname, symbol) != 0)              /* (its size: of another symbol) */
        return DPU_ERR_UNKNOWN_SYMBOL;
    uint8_t *lo = NULL, *hi = NULL;
    if (dpu->variables)
        dpu->variables(&lo, &hi);
    size = (size_t)sym->st_size;
    in_mram = lo && address >= lo && address < hi;
#endif
    if (in_mram) {                      /* an MRAM variable: MRAM's rules */
        if (offset % EDSL_DMA_ALIGN || length % EDSL_DMA_ALIGN)
            return DPU_ERR_INVALID_MRAM_ACCESS;
    } else if (offset % 4 || length % 4) {
        return DPU_ERR_INVALID_WRAM_ACCESS;
    }
    if ((size_t)offset + length > size)
        return DPU_ERR_INVALID_SYMBOL_ACCESS;
    *where = address ? address + offset : NULL;
    return DPU_OK;
}

static dpu_error_t copy(struct edsl_sim_dpu *dpu, dpu_xfer_t xfer, const char *symbol, uint32_t offset,
                        void *buffer, size_t length) {
    uint8_t *where;
    dpu_error_t err = locate(dpu, symbol, offset, length, &where);
    if (err != DPU_OK)
        return err;
#ifdef EDSL_SIM_MODEL
    if (!where)
        return model_copy(&dpu->self.system->model, dpu->self.index, xfer, symbol, offset, buffer, length);
#endif
    if (xfer == DPU_XFER_TO_DPU)
        memcpy(where, buffer, length);
    else
        memcpy(buffer, where, length);
    return DPU_OK;
}

dpu_error_t dpu_prepare_xfer(struct dpu_set_t set, void *buffer) {
    for (uint32_t i = 0; i < set.count; i++)
        set.system->dpus[set.first + i].xfer = buffer;
    return DPU_OK;
}

dpu_error_t dpu_push_xfer(struct dpu_set_t set, dpu_xfer_t xfer, const char *symbol_name,
                          uint32_t symbol_offset, size_t length, dpu_xfer_flags_t flags) {
    dpu_error_t result = DPU_OK;
    for (uint32_t i = 0; i < set.count; i++) {
        struct edsl_sim_dpu *dpu = &set.system->dpus[set.first + i];
        if (!dpu->xfer)
            continue;
        dpu_error_t err = copy(dpu, xfer, symbol_name, symbol_offset, dpu->xfer, length);
        if (err != DPU_OK && result == DPU_OK)
            result = err;
        if (!(flags & DPU_XFER_NO_RESET))
            dpu->xfer = NULL;
    }
    return result;
}

dpu_error_t dpu_copy_to(struct dpu_set_t set, const char *symbol_name, uint32_t symbol_offset,
                        const void *src, size_t length) {
    for (uint32_t i = 0; i < set.count; i++) {
        dpu_error_t err = copy(&set.system->dpus[set.first + i], DPU_XFER_TO_DPU, symbol_name,
                               symbol_offset, (void *)src, length);
        if (err != DPU_OK)
            return err;
    }
    return DPU_OK;
}

dpu_error_t dpu_broadcast_to(struct dpu_set_t set, const char *symbol_name, uint32_t symbol_offset,
                             const void *src, size_t length, dpu_xfer_flags_t flags) {
    (void)flags;
    return dpu_copy_to(set, symbol_name, symbol_offset, src, length);
}

dpu_error_t dpu_sync(struct dpu_set_t set) {
    return set.system ? DPU_OK : DPU_ERR_INVALID_DPU_SET;
}

dpu_error_t dpu_copy_from(struct dpu_set_t set, const char *symbol_name, uint32_t symbol_offset,
                          void *dst, size_t length) {
    if (set.count != 1)
        return DPU_ERR_INVALID_DPU_SET;
    return copy(&set.system->dpus[set.first], DPU_XFER_FROM_DPU, symbol_name, symbol_offset, dst, length);
}

/* With EDSL_SIM_COUNTS naming a file, each DPU's counts of each launch are
 * appended to it, a JSON line each: {"launch", "dpu", "program" (its file),
 * "dma": [[reads, bytes read, writes, bytes written] a tasklet], "blocks":
 * [[executed blocks of each counter] a tasklet]} (edsl.export.counting_build
 * reads them). */
static unsigned long launches;

static void write_counts(struct edsl_sim_dpu *dpu, unsigned long launch, uint32_t index) {
    const char *path = getenv("EDSL_SIM_COUNTS");
    if (!path || !*path || !dpu->counts)
        return;
    const int64_t *blocks;
    const uint64_t *dma;
    unsigned int slots, tasklets;
    dpu->counts(&blocks, &slots, &dma, &tasklets);
    FILE *out = fopen(path, "a");
    if (!out) {
        fprintf(stderr, "[dpu sim] cannot write the counts to %s: %s\n", path, strerror(errno));
        return;
    }
    fprintf(out, "{\"launch\": %lu, \"dpu\": %u, \"program\": \"", launch, (unsigned)index);
    for (const char *c = dpu->program; *c; c++)
        fprintf(out, *c == '"' || *c == '\\' ? "\\%c" : (unsigned char)*c < 0x20 ? "?" : "%c", *c);
    fprintf(out, "\", \"dma\": [");
    for (unsigned int t = 0; t < tasklets; t++)
        fprintf(out, "%s[%llu, %llu, %llu, %llu]", t ? ", " : "", (unsigned long long)dma[4 * t],
                (unsigned long long)dma[4 * t + 1], (unsigned long long)dma[4 * t + 2],
                (unsigned long long)dma[4 * t + 3]);
    fprintf(out, "], \"blocks\": [");
    for (unsigned int t = 0; t < tasklets && slots; t++) {
        fprintf(out, "%s[", t ? ", " : "");
        for (unsigned int k = 0; k < slots; k++)
            fprintf(out, "%s%lld", k ? ", " : "", (long long)blocks[(size_t)t * slots + k]);
        fprintf(out, "]");
    }
    fprintf(out, "]}\n");
    fclose(out);
}

dpu_error_t dpu_launch(struct dpu_set_t set, dpu_launch_policy_t policy) {
    if (policy != DPU_SYNCHRONOUS && policy != DPU_ASYNCHRONOUS)
        return DPU_ERR_INVALID_LAUNCH_POLICY;
    dpu_error_t result = DPU_OK;
    for (uint32_t i = 0; i < set.count; i++) {
        uint32_t index = set.first + i;
        struct edsl_sim_dpu *dpu = &set.system->dpus[index];
        if (!dpu->loaded)
            return DPU_ERR_NO_PROGRAM_LOADED;
#ifdef EDSL_SIM_MODEL
        dpu_error_t err = model_launch(&set.system->model, index, dpu->mram_file, dpu->heap_offset);
        if (err == DPU_ERR_SYSTEM)
            return err;
        if (err != DPU_OK) {
            dpu->faulted = 1;
            result = DPU_ERR_DPU_FAULT;
        }
        continue;
#endif
        char message[512] = "";
        void *window = mmap((void *)EDSL_SIM_MRAM_WINDOW, (size_t)EDSL_MRAM_BYTES, PROT_READ | PROT_WRITE,
                            MAP_SHARED | MAP_FIXED, dpu->mram_file, 0);
        if (window != (void *)EDSL_SIM_MRAM_WINDOW) {
            fprintf(stderr, "[dpu sim] cannot map DPU %u's MRAM: %s\n", (unsigned)index, strerror(errno));
            return DPU_ERR_SYSTEM;
        }
        if (dpu->run(dpu->entry, window, (size_t)EDSL_MRAM_BYTES, dpu->heap_offset, message, sizeof message)) {
            fprintf(stderr, "[dpu sim] DPU %u fault: %s\n", (unsigned)index, message);
            dpu->faulted = 1;
            result = DPU_ERR_DPU_FAULT;
        }
        write_counts(dpu, launches, index);
    }
    launches++;
    return result;
}

/* ---- dpu_log_read ----------------------------------------------------------
 * As the SDK's: a header naming the DPU, then the DPU's printf messages (see
 * dpu_sim_rt.c for their encoding), each conversion printed by the host's
 * fprintf: %s, %c, %d %i %u %x %X %o %p (64-bit with an 'l'), %e %E %f, %b (32
 * bits, lowest first); any other conversion prints as its text and takes 4
 * bytes. A message keeps at most 64 conversions and runs of text of 15
 * characters each. A log that wrapped around its buffer is not printed:
 * DPU_ERR_LOG_BUFFER_TOO_SMALL. */
#define LOG_ITEMS 64
#define LOG_ITEM_CHARS 16

static dpu_error_t print_log(const uint8_t *p, const uint8_t *end, FILE *stream) {
    char items[LOG_ITEMS][LOG_ITEM_CHARS];
    for (;;) {
        while (p < end && *p != '%')
            p++;
        if (p >= end)
            return DPU_OK;
        int n = 0, len = 0;
        for (; p < end && *p; p++) {
            if (*p == '%') {
                if (n == LOG_ITEMS)
                    return DPU_ERR_LOG_FORMAT;
                n++;
                len = 0;
            } else if (len == LOG_ITEM_CHARS - 1) {
                return DPU_ERR_LOG_FORMAT;
            }
            items[n - 1][len++] = (char)*p;
            items[n - 1][len] = 0;
        }
        if (p++ >= end)
            return DPU_OK;
        for (int k = 0; k < n; k++) {
            const char *f = items[k];
            size_t last = strlen(f) - 1;
            if (p > end)
                return DPU_ERR_LOG_FORMAT;
            switch (f[last]) {
            case 's': {
                const uint8_t *nul = memchr(p, 0, (size_t)(end - p));
                if (!nul)
                    return DPU_ERR_LOG_FORMAT;
                fprintf(stream, f, (const char *)p);
                p = nul + 1;
                break;
            }
            case 'c':
                if (p >= end)
                    return DPU_ERR_LOG_FORMAT;
                fprintf(stream, f, (int)*p++);
                break;
            case 'b': {
                int32_t v;
                if (end - p < 4)
                    return DPU_ERR_LOG_FORMAT;
                memcpy(&v, p, 4);
                p += 4;
                for (int bit = 0; bit < 32; bit++)
                    fprintf(stream, "%u", (unsigned)(v >> bit) & 1u);
                break;
            }
            case 'd': case 'i': case 'x': case 'X': case 'o': case 'p': case 'u':
                if (memchr(f, 'l', last)) {
                    int64_t v;
                    if (end - p < 8)
                        return DPU_ERR_LOG_FORMAT;
                    memcpy(&v, p, 8);
                    p += 8;
                    if (strstr(f, "ll"))
                        fprintf(stream, f, (long long)v);
                    else
                        fprintf(stream, f, (long)v);
                } else {
                    int32_t v;
                    if (end - p < 4)
                        return DPU_ERR_LOG_FORMAT;
                    memcpy(&v, p, 4);
                    p += 4;
                    fprintf(stream, f, (int)v);
                }
                break;
            case 'e': case 'E': case 'f': {
                double d;
                if (end - p < 8)
                    return DPU_ERR_LOG_FORMAT;
                memcpy(&d, p, 8);
                p += 8;
                fprintf(stream, f, d);
                break;
            }
            default:
                fprintf(stream, "%s", f);
                p += 4;
            }
        }
    }
}

dpu_error_t dpu_log_read(struct dpu_set_t set, FILE *stream) {
    if (set.count != 1)
        return DPU_ERR_INVALID_DPU_SET;
    struct edsl_sim_dpu *dpu = &set.system->dpus[set.first];
    fprintf(stream, "=== DPU#0x%x ===\n", (unsigned)set.first);
    if (!dpu->loaded)
        return DPU_ERR_NO_PROGRAM_LOADED;
#ifdef EDSL_SIM_MODEL
    return model_log(&set.system->model, set.first, stream);
#endif
    const uint8_t *data;
    uint32_t bytes;
    int wrapped;
    if (!dpu->log(&data, &bytes, &wrapped))
        return DPU_ERR_LOG_CONTEXT_MISSING;
    if (wrapped)
        return DPU_ERR_LOG_BUFFER_TOO_SMALL;
    data = host_view(dpu, data);          /* (a buffer in MRAM: where the DPU saw it while it ran) */
    return print_log(data, data + bytes, stream);
}

dpu_error_t dpulog_read_for_dpu(struct dpu_t *dpu, FILE *stream) {
    if (!dpu)
        return DPU_ERR_INVALID_DPU_SET;
    return dpu_log_read(edsl_sim_set_dpu((struct dpu_set_t){dpu->system, 0, dpu->system->nr_dpus, NULL},
                                         dpu->index), stream);
}
