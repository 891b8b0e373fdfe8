/*
 * tune.c: the GPU autotuner and its tab-separated cache (contract in
 * wd_tune.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cuda_rt.h"
#include "wd_build_id.h"
#include "wd_core.h"
#include "wd_operator.h"
#include "wd_tune.h"

#define TUNE_VERSION 1
#define TUNE_REPS 5
#define MAX_ENTRIES 4096

typedef struct entry {
    char gpu[128], variant[64], volume[48], aux[48];
    int block;
    double us;
} entry;

static entry table[MAX_ENTRIES];
static int n_entries;
static char cache_path[1024];
static char note[1280]; /* the longest message with a 1023-byte path */
static int loaded, moved_aside, refused;
static char gpu_name[128];

const char *wd_tune_build_id(void)
{
    return WD_BUILD_ID;
}

const char *wd_tune_cache_note(void)
{
    return note;
}

static void default_path(void)
{
    const char *env = getenv("WDIRAC_TUNE_CACHE");
    const char *home = getenv("HOME");
    if (env)
        snprintf(cache_path, sizeof cache_path, "%s", env);
    else if (home)
        snprintf(cache_path, sizeof cache_path, "%s/.cache/wdirac/tunecache.tsv", home);
    else
        cache_path[0] = 0;
}

static void load(void)
{
    loaded = 1;
    n_entries = 0;
    refused = 0;
    if (!cache_path[0])
        return;
    FILE *f = fopen(cache_path, "r");
    if (!f)
        return;
    char line[1024], build[64] = "";
    int version = 0;
    if (!fgets(line, sizeof line, f) ||
        sscanf(line, "#wdirac-tunecache\t%d\t%63s", &version, build) != 2) {
        snprintf(note, sizeof note, "tune cache %s is not a wdirac tune cache: ignored", cache_path);
        refused = 1;
        fclose(f);
        return;
    }
    if (version != TUNE_VERSION || strcmp(build, WD_BUILD_ID) != 0) {
        snprintf(note, sizeof note,
                 "tune cache %s comes from another build (version %d, build %s; this is version %d, "
                 "build %s): refused, retuning", cache_path, version, build, TUNE_VERSION, WD_BUILD_ID);
        refused = 1;
        fclose(f);
        return;
    }
    while (fgets(line, sizeof line, f) && n_entries < MAX_ENTRIES) {
        entry e;
        char b[64];
        if (line[0] == '#')
            continue;
        if (sscanf(line, "%127[^\t]\t%63[^\t]\t%63[^\t]\t%47[^\t]\t%47[^\t]\t%d\t%lf", e.gpu, b,
                   e.variant, e.volume, e.aux, &e.block, &e.us) == 7 &&
            strcmp(b, WD_BUILD_ID) == 0 && e.block > 0)
            table[n_entries++] = e;
    }
    fclose(f);
}

wd_status wd_tune_set_cache(const char *path)
{
    if (path)
        snprintf(cache_path, sizeof cache_path, "%s", path);
    else
        default_path();
    note[0] = 0;
    moved_aside = 0;
    load();
    return WD_OK;
}

static void mkdirs(const char *path)
{
    char d[1024];
    snprintf(d, sizeof d, "%s", path);
    for (char *p = d + 1; *p; ++p)
        if (*p == '/') {
            *p = 0;
            mkdir(d, 0755);
            *p = '/';
        }
}

static wd_status save(void)
{
    if (!cache_path[0])
        return WD_OK;
    mkdirs(cache_path);
    if (refused && !moved_aside) {
        char old[1100];
        snprintf(old, sizeof old, "%s.old", cache_path);
        rename(cache_path, old);
        moved_aside = 1;
    }
    char tmp[1100];
    /* the ranks of a process grid may save at once: each its own file */
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", cache_path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        return wd_fail(WD_ERR_IO, "cannot write tune cache %s: %s", tmp, strerror(errno));
    fprintf(f, "#wdirac-tunecache\t%d\t%s\n", TUNE_VERSION, WD_BUILD_ID);
    fprintf(f, "#gpu\tbuild\tvariant\tvolume\taux\tblock\tus\n");
    for (int i = 0; i < n_entries; ++i)
        fprintf(f, "%s\t%s\t%s\t%s\t%s\t%d\t%.3f\n", table[i].gpu, WD_BUILD_ID, table[i].variant,
                table[i].volume, table[i].aux, table[i].block, table[i].us);
    if (fclose(f) != 0 || rename(tmp, cache_path) != 0)
        return wd_fail(WD_ERR_IO, "cannot write tune cache %s: %s", cache_path, strerror(errno));
    return WD_OK;
}

/* the cache loaded and this GPU's name known: key's gpu, variant and
 * volume filled in */
static wd_status start_key(entry *key, const char *variant, const int dims[4])
{
    if (!loaded) {
        default_path();
        load();
    }
    if (!gpu_name[0]) {
        wd_cuda_info info;
        wd_status st = wd_cuda_device_info(&info);
        if (st != WD_OK)
            return st;
        snprintf(gpu_name, sizeof gpu_name, "%.127s", info.name);
    }
    memset(key, 0, sizeof *key);
    snprintf(key->gpu, sizeof key->gpu, "%s", gpu_name);
    snprintf(key->variant, sizeof key->variant, "%s", variant);
    snprintf(key->volume, sizeof key->volume, "%dx%dx%dx%d", dims[0], dims[1], dims[2], dims[3]);
    return WD_OK;
}

/* the cached entry of key's gpu, variant, volume and aux, or NULL */
static const entry *find(const entry *key)
{
    for (int i = 0; i < n_entries; ++i)
        if (!strcmp(table[i].gpu, key->gpu) && !strcmp(table[i].variant, key->variant) &&
            !strcmp(table[i].volume, key->volume) && !strcmp(table[i].aux, key->aux))
            return &table[i];
    return NULL;
}

/* key, with its tuned value (a block, a route, groups a launch) and time,
 * added to the cache and saved */
static wd_status keep(entry *key, int value, double us)
{
    key->block = value;
    key->us = us;
    if (n_entries < MAX_ENTRIES)
        table[n_entries++] = *key;
    return save();
}

/* the halo route's entries: the variant word HALO_ROUTE, the route (> 0:
 * a wd_halo_policy, or backend_cuda.cu's COPY_ZT) in the block column */
#define HALO_ROUTE "halo_route"

wd_status wd_tune_halo_find(const int dims[4], const char *aux, int *route)
{
    entry key;
    *route = -1;
    wd_status st = start_key(&key, HALO_ROUTE, dims);
    if (st != WD_OK)
        return st;
    snprintf(key.aux, sizeof key.aux, "%s", aux);
    const entry *e = find(&key);
    if (e)
        *route = e->block;
    return WD_OK;
}

wd_status wd_tune_halo_save(const int dims[4], const char *aux, int route, double us)
{
    entry key;
    wd_status st = start_key(&key, HALO_ROUTE, dims);
    if (st != WD_OK)
        return st;
    snprintf(key.aux, sizeof key.aux, "%s", aux);
    entry *e = (entry *)find(&key);
    if (!e)
        return keep(&key, route, us);
    e->block = route;  /* retuned: the ranks' cached choices disagreed */
    e->us = us;
    return save();
}

wd_status wd_tune_groups(int variant, const wd_dslash_args *a, int pad, int *per_launch,
                         int *block)
{
    const int groups = a->groups > 1 ? a->groups : 1;
    wd_dslash_args b = *a;
    if (groups == 1) {
        *per_launch = 1;
        return wd_tune_dslash(variant, a, pad, block);
    }
    entry key;
    wd_status st = start_key(&key, wd_variants[variant].name, a->dims);
    if (st != WD_OK)
        return st;
    snprintf(key.aux, sizeof key.aux, "pad=%d groups=%d split", pad, groups);
    const entry *e = find(&key);
    if (e && e->block >= 1 && groups % e->block == 0) {
        *per_launch = b.groups = e->block;
        return wd_tune_dslash(variant, &b, pad, block);
    }
    /* every divisor of the groups, the largest (fewest launches) first:
     * the first of equal times wins */
    double best = 1e300;
    int best_g = 0, best_block = 0;
    for (int g = groups; g >= 1; --g) {
        if (groups % g)
            continue;
        int blk = 0;
        double us = 0;
        b.groups = g;
        if ((st = wd_tune_dslash(variant, &b, pad, &blk)) != WD_OK ||
            (st = wd_cuda_time_split(variant, a, blk, g, TUNE_REPS, &us)) != WD_OK)
            return st;
        if (us < best) {
            best = us;
            best_g = g;
            best_block = blk;
        }
    }
    *per_launch = best_g;
    *block = best_block;
    return keep(&key, best_g, best);
}

wd_status wd_tune_dslash(int variant, const wd_dslash_args *a, int pad, int *block)
{
    entry key;
    wd_status st0 = start_key(&key, wd_variants[variant].name, a->dims);
    if (st0 != WD_OK)
        return st0;
    /* a decomposed kernel's boundary sites read ghosts, a launch over
     * several groups of right-hand sides and a reducing kernel run other
     * kernels: each its own entry, and any combination its own too (the
     * groups kernel takes more registers, so the one-group kernel's block
     * may not launch with it, and each rank tunes alone, so that block
     * failed the launch on one rank only: 2 GPUs, grid 1x1x2x1,
     * dslash_h_r12_gf0_dag0_xpay1_n2 over 3 groups).  The words in this
     * order, so the keys of the combinations that existed before "reduce"
     * could meet "groups" are the same strings. */
    int len = snprintf(key.aux, sizeof key.aux, "pad=%d", pad);
    if (a->part)
        len += snprintf(key.aux + len, sizeof key.aux - (size_t)len, " part=%d", a->part);
    if (a->groups > 1)
        len += snprintf(key.aux + len, sizeof key.aux - (size_t)len, " groups=%d", a->groups);
    if (a->red_partial)
        snprintf(key.aux + len, sizeof key.aux - (size_t)len, " reduce");
    const entry *e = find(&key);
    if (e) {
        *block = e->block;
        return WD_OK;
    }

    double best = 1e300;
    int best_block = 0;
    for (int b = 32; b <= 1024; b += 32) {
        double us;
        wd_status st = wd_cuda_time_dslash(variant, a, b, TUNE_REPS, &us);
        if (st != WD_OK) {
            /* a block the kernel cannot launch with (registers) ends the sweep */
            if (best_block)
                break;
            return st;
        }
        if (us < best) {
            best = us;
            best_block = b;
        }
    }
    *block = best_block;
    return keep(&key, best_block, best);
}
