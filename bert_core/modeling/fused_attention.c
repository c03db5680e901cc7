/* Fused self-attention for CPU inference (fp32): scores, softmax and context for one block of query rows at a
 * time, while that block is still in L1; and the LayerNorm that follows it, written where the caller wants it.
 * Built twice from this one source: with -DBERTSCOPE_AVX512 (16 lanes) or -DBERTSCOPE_AVX2 (8 lanes, the
 * laptops without AVX-512); only the vector layer below differs.
 *
 * Why a kernel of our own: with every attention map kept, bert-base at 512 tokens spends ~14 % of its forward in
 * attention, where the library matmuls have an inner size of only 64 and the 12.6 MB of scores per layer make
 * three trips through memory (matmul, softmax, context). Here each block of rows is scored, normalised, written
 * once to the caller's probability buffer and multiplied into the context straight from L1
 * (docs/benchmarks.md, section 1, has the measurements).
 *
 * Shapes (one sequence; the caller loops over the batch):
 *   q, k, v  (S, ld)   head h in columns [h*D, (h+1)*D): the projection outputs as they are, no copies
 *   mask     (S)       additive, per key, or NULL
 *   probs    (N, S, S) out: softmax(scale * q k^T + mask), row-major
 *   ctx      (S, ldc)  out: probs @ v, head h in columns [h*D, (h+1)*D) (the layout the output projection reads)
 * D must be 16, 32, 48 or 64.
 *
 * Threads come from the OpenMP runtime the process already has loaded: torch's own libgomp, so the kernel's
 * threads are torch's threads (bert_core/modeling/fused.py refuses to use it if a second runtime appears).
 * Work is split into (head, row block) items in a fixed order, so results do not depend on the thread count.
 */
#include <immintrin.h>
#include <omp.h>
#include <stdlib.h>

/* ---- the vector layer: W lanes; `lanes` is a mask of the first n lanes ---- */
#if defined(BERTSCOPE_AVX512)
#define W 16
#define SCORE_NV 4 /* score tile: ROWS x 4 vectors = 24 accumulators of the 32 registers */
#define CONTEXT_NV 4
typedef __m512 vec;
typedef __mmask16 lanes;
#define v_zero() _mm512_setzero_ps()
#define v_set(x) _mm512_set1_ps(x)
#define v_load(p) _mm512_load_ps(p)
#define v_loadu(p) _mm512_loadu_ps(p)
#define v_store(p, x) _mm512_store_ps(p, x)
#define v_storeu(p, x) _mm512_storeu_ps(p, x)
#define v_fmadd(a, b, c) _mm512_fmadd_ps(a, b, c)
#define v_fnmadd(a, b, c) _mm512_fnmadd_ps(a, b, c)
#define v_mul(a, b) _mm512_mul_ps(a, b)
#define v_add(a, b) _mm512_add_ps(a, b)
#define v_sub(a, b) _mm512_sub_ps(a, b)
#define v_max(a, b) _mm512_max_ps(a, b)
#define v_hmax(x) _mm512_reduce_max_ps(x)
#define v_hsum(x) _mm512_reduce_add_ps(x)
static inline lanes first_lanes(long n) { return n >= W ? (lanes)0xFFFF : n <= 0 ? (lanes)0 : (lanes)((1u << n) - 1); }
#define v_load_lanes(m, p) _mm512_maskz_loadu_ps(m, p)
#define v_store_lanes(m, p, x) _mm512_mask_storeu_ps(p, m, x)
#define v_keep(m, x) _mm512_maskz_mov_ps(m, x)
#define v_max_lanes(m, a, b) _mm512_mask_max_ps(a, m, a, b)
/* p * 2^n for p in [2^-1/2, 2^1/2] and integer n >= -151: scalef reaches subnormals and zero */
static inline vec v_pow2_times(vec p, vec n) { return _mm512_scalef_ps(p, n); }
#define v_round(x) _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define EXP2_FLOOR -151.0f /* 2^-151 rounds to 0 in fp32 */
/* dst (W, W), rows ld apart = the transpose of src (W, W), rows ls apart. Three rounds of shuffles: 2 x 2
 * blocks of floats, then of float pairs (both within 128-bit lanes), then the lanes themselves. */
static inline void v_transpose(const float *src, long ls, float *dst, long ld) {
    __m512 r[16], t[16];
    for (int i = 0; i < 16; i++) r[i] = _mm512_loadu_ps(src + i * ls);
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    /* r[4g + j], 128-bit lane L: column 4L + j of rows 4g .. 4g + 3 */
    for (int g = 0; g < 16; g += 4)
        for (int j = 0; j < 2; j++) {
            __m512d a = _mm512_castps_pd(t[g + j]), b = _mm512_castps_pd(t[g + j + 2]);
            r[g + 2 * j] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
            r[g + 2 * j + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
        }
    /* column 4L + j = lane L of r[j], r[4 + j], r[8 + j], r[12 + j] */
    for (int j = 0; j < 4; j++) {
        __m512 x0 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x44), x1 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xEE);
        __m512 y0 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x44);
        __m512 y1 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xEE);
        _mm512_storeu_ps(dst + j * ld, _mm512_shuffle_f32x4(x0, y0, 0x88));
        _mm512_storeu_ps(dst + (4 + j) * ld, _mm512_shuffle_f32x4(x0, y0, 0xDD));
        _mm512_storeu_ps(dst + (8 + j) * ld, _mm512_shuffle_f32x4(x1, y1, 0x88));
        _mm512_storeu_ps(dst + (12 + j) * ld, _mm512_shuffle_f32x4(x1, y1, 0xDD));
    }
}

#elif defined(BERTSCOPE_AVX2)
#define W 8
#define SCORE_NV 2 /* ROWS x 2 vectors = 12 accumulators of the 16 registers */
#define CONTEXT_NV 2
typedef __m256 vec;
typedef __m256i lanes;
#define v_zero() _mm256_setzero_ps()
#define v_set(x) _mm256_set1_ps(x)
#define v_load(p) _mm256_load_ps(p)
#define v_loadu(p) _mm256_loadu_ps(p)
#define v_store(p, x) _mm256_store_ps(p, x)
#define v_storeu(p, x) _mm256_storeu_ps(p, x)
#define v_fmadd(a, b, c) _mm256_fmadd_ps(a, b, c)
#define v_fnmadd(a, b, c) _mm256_fnmadd_ps(a, b, c)
#define v_mul(a, b) _mm256_mul_ps(a, b)
#define v_add(a, b) _mm256_add_ps(a, b)
#define v_sub(a, b) _mm256_sub_ps(a, b)
#define v_max(a, b) _mm256_max_ps(a, b)
static inline float v_hmax(vec x) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}
static inline float v_hsum(vec x) {
    __m128 m = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    m = _mm_add_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_add_ss(m, _mm_movehdup_ps(m)));
}
static inline lanes first_lanes(long n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n < W ? n : W)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
#define v_load_lanes(m, p) _mm256_maskload_ps(p, m)
#define v_store_lanes(m, p, x) _mm256_maskstore_ps(p, m, x)
#define v_keep(m, x) _mm256_and_ps(_mm256_castsi256_ps(m), x)
#define v_max_lanes(m, a, b) _mm256_blendv_ps(a, _mm256_max_ps(a, b), _mm256_castsi256_ps(m))
/* Without scalef, 2^n goes straight into the exponent bits, which covers normal results only: t below -126 is
 * flushed to 0 (expf would give a subnormal under 1.2e-38, far below what the 1e-5 tolerance sees). At n = -126,
 * t - n >= 0, so p >= 1 and the result is still normal. */
static inline vec v_pow2_times(vec p, vec n) {
    __m256i bits = _mm256_add_epi32(_mm256_castps_si256(p), _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23));
    return _mm256_castsi256_ps(bits);
}
#define v_round(x) _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define EXP2_FLOOR -126.0f
/* dst (W, W), rows ld apart = the transpose of src (W, W), rows ls apart: as the AVX-512 one, two lanes. */
static inline void v_transpose(const float *src, long ls, float *dst, long ld) {
    __m256 r[8], t[8];
    for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(src + i * ls);
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int g = 0; g < 8; g += 4)
        for (int j = 0; j < 2; j++) {
            __m256d a = _mm256_castps_pd(t[g + j]), b = _mm256_castps_pd(t[g + j + 2]);
            r[g + 2 * j] = _mm256_castpd_ps(_mm256_unpacklo_pd(a, b));
            r[g + 2 * j + 1] = _mm256_castpd_ps(_mm256_unpackhi_pd(a, b));
        }
    for (int j = 0; j < 4; j++) {
        _mm256_storeu_ps(dst + j * ld, _mm256_permute2f128_ps(r[j], r[4 + j], 0x20));
        _mm256_storeu_ps(dst + (4 + j) * ld, _mm256_permute2f128_ps(r[j], r[4 + j], 0x31));
    }
}

#else
#error "build with -DBERTSCOPE_AVX512 or -DBERTSCOPE_AVX2"
#endif

/* Query rows per block. 6 rows x 4 vectors was the fastest AVX-512 score tile at 512 tokens (of 12 x 2, 8 x 3,
 * 14 x 2 and 6 x 4); 6 x 2 is the AVX2 tile that fits its 16 registers. */
#define ROWS 6

typedef struct {
    const float *q, *k, *v, *mask;
    float *probs, *ctx;
    long s, ld, ldc, d, spad, lds, blocks; /* spad: S rounded up to whole vectors; lds: scratch row stride */
    float scale;
} problem_t;

/* exp(x) for x <= 0 (arguments are x - rowmax), as 2^t with t = x log2(e): n = round(t), then 2^(t - n) by a
 * degree-6 polynomial fitted to 2^f on [-1/2, 1/2] (at most 1.3 ulp in fp32), scaled by 2^n. The rounding of t
 * costs |t| ulp of relative error, which only matters where exp(x) is already tiny. Cheaper than the natural-base
 * route (two-part ln2 reduction and a degree-7 polynomial) by three operations a vector, a fifth of the softmax.
 * Padding keys (mask = -FLT_MAX) get exactly zero weight, as with expf; a row whose keys are all padding gets equal
 * weights, as in the reference (x - rowmax = 0). A NaN stays NaN (max returns its second operand when one is NaN),
 * so a NaN score spoils its row as it does in the reference instead of being quietly given zero weight. */
static inline vec exp_nonpositive(vec x) {
    vec t = v_mul(x, v_set(1.44269504088896341f));
    vec below = t;
    t = v_max(v_set(EXP2_FLOOR), t);
    vec n = v_round(t);
    vec f = v_sub(t, n);
    vec p = v_set(1.5345810970757157e-4f);
    p = v_fmadd(p, f, v_set(1.3399930903688073e-3f));
    p = v_fmadd(p, f, v_set(9.618489071726799e-3f));
    p = v_fmadd(p, f, v_set(5.550328642129898e-2f));
    p = v_fmadd(p, f, v_set(0.24022646248340607f));
    p = v_fmadd(p, f, v_set(0.6931471824645996f));
    p = v_fmadd(p, f, v_set(1.0f));
    vec e = v_pow2_times(p, n);
#if defined(BERTSCOPE_AVX2)
    e = _mm256_andnot_ps(_mm256_cmp_ps(below, v_set(EXP2_FLOOR), _CMP_LT_OQ), e); /* NaN compares false: kept */
#else
    (void)below;
#endif
    return e;
}

/* tile (rows, W * nvec) at column j0 = scale * q kt + mask. kt is this head's K^T, (D, spad) with row stride
 * lds, zero past S. rows and nvec are constants after inlining, so the accumulators stay in registers. */
static inline __attribute__((always_inline)) void score_tile(const problem_t *p, const float *q, const float *kt,
                                                             float *tile, int rows, int nvec, long j0) {
    vec acc[ROWS][SCORE_NV];
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < nvec; c++) acc[r][c] = v_zero();
    for (long dd = 0; dd < p->d; dd++) {
        const float *krow = kt + dd * p->lds + j0;
        vec b[SCORE_NV];
        for (int c = 0; c < nvec; c++) b[c] = v_load(krow + W * c);
        for (int r = 0; r < rows; r++) {
            vec a = v_set(q[r * p->ld + dd]);
            for (int c = 0; c < nvec; c++) acc[r][c] = v_fmadd(a, b[c], acc[r][c]);
        }
    }
    vec scale = v_set(p->scale);
    for (int c = 0; c < nvec; c++) {
        long j = j0 + W * c;
        /* scale first, then the mask: the reference's order */
        vec m = p->mask ? v_load_lanes(first_lanes(p->s - j), p->mask + j) : v_zero();
        for (int r = 0; r < rows; r++) v_store(tile + r * p->lds + j, v_add(v_mul(acc[r][c], scale), m));
    }
}

/* switch cases for every (rows, vectors) pair a tile can have, so each gets its own register allocation */
#define TILE_CASE(R, NV)                                                                                       \
    case R * 8 + NV:                                                                                           \
        TILE(R, NV);                                                                                           \
        break;
#if SCORE_NV == 4
#define ROW_CASES(R) TILE_CASE(R, 1) TILE_CASE(R, 2) TILE_CASE(R, 3) TILE_CASE(R, 4)
#else
#define ROW_CASES(R) TILE_CASE(R, 1) TILE_CASE(R, 2)
#endif
#define ALL_CASES ROW_CASES(1) ROW_CASES(2) ROW_CASES(3) ROW_CASES(4) ROW_CASES(5) ROW_CASES(6)

static void score_rows(const problem_t *p, const float *q, const float *kt, float *tile, int rows) {
    for (long j0 = 0; j0 < p->spad; j0 += W * SCORE_NV) {
        long left = (p->spad - j0) / W;
        int nvec = left < SCORE_NV ? (int)left : SCORE_NV;
#define TILE(R, NV) score_tile(p, q, kt, tile, R, NV, j0)
        switch (rows * 8 + nvec) { ALL_CASES }
#undef TILE
    }
}

/* One row of scores x (S valid of spad): leaves exp(x - max) in x (zero past S) and returns 1 / sum. The
 * context multiplies by it once per output instead of once per weight, and writes the probabilities. */
static float softmax_row(float *x, long s) {
    vec vmax = v_set(-__builtin_inff());
    long j = 0;
    for (; j + W <= s; j += W) vmax = v_max(vmax, v_load(x + j));
    long rest = s - j;
    lanes tail = first_lanes(rest);
    if (rest) vmax = v_max_lanes(tail, vmax, v_load(x + j));
    vec mx = v_set(v_hmax(vmax));
    vec sum = v_zero();
    for (j = 0; j + W <= s; j += W) {
        vec e = exp_nonpositive(v_sub(v_load(x + j), mx));
        v_store(x + j, e);
        sum = v_add(sum, e);
    }
    if (rest) {
        vec e = v_keep(tail, exp_nonpositive(v_sub(v_load(x + j), mx)));
        v_store(x + j, e);
        sum = v_add(sum, e);
    }
    return 1.0f / v_hsum(sum);
}

/* acc[r] += w[r, j] * v[j] for keys j in [from, to): the context's inner loop */
static inline __attribute__((always_inline)) void context_keys(const problem_t *p, const float *w, const float *v,
                                                               vec acc[ROWS][CONTEXT_NV], int rows, int nv,
                                                               long from, long to) {
    for (long j = from; j < to; j++) {
        vec b[CONTEXT_NV];
        for (int c = 0; c < nv; c++) b[c] = v_loadu(v + j * p->ld + W * c);
        for (int r = 0; r < rows; r++) {
            vec a = v_set(w[r * p->lds + j]);
            for (int c = 0; c < nv; c++) acc[r][c] = v_fmadd(a, b[c], acc[r][c]);
        }
    }
}

/* out (rows, W * nv) = (w (rows, S) @ v (S, W * nv)) * inv[row]; w rows are lds apart. With dst, it also writes
 * the probabilities w * inv[row] (rows S apart), one vector per row between every W keys' multiply-adds. Written
 * in one burst after each row's softmax instead, the 12.6 MB of probabilities a layer (bert-base, 512 tokens)
 * waited on memory; spread out like this, the stores overlap the arithmetic. */
static inline __attribute__((always_inline)) void context_tile(const problem_t *p, const float *w,
                                                               const float *v, const float *inv, float *out,
                                                               float *dst, int rows, int nv) {
    vec acc[ROWS][CONTEXT_NV];
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < nv; c++) acc[r][c] = v_zero();
    long s = p->s, j0 = 0;
    for (; j0 + W <= s; j0 += W) {
        if (dst)
            for (int r = 0; r < rows; r++)
                v_storeu(dst + r * s + j0, v_mul(v_load(w + r * p->lds + j0), v_set(inv[r])));
        context_keys(p, w, v, acc, rows, nv, j0, j0 + W);
    }
    if (j0 < s) {
        lanes tail = first_lanes(s - j0);
        if (dst)
            for (int r = 0; r < rows; r++)
                v_store_lanes(tail, dst + r * s + j0, v_mul(v_load(w + r * p->lds + j0), v_set(inv[r])));
        context_keys(p, w, v, acc, rows, nv, j0, s);
    }
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < nv; c++) v_storeu(out + r * p->ldc + W * c, v_mul(acc[r][c], v_set(inv[r])));
}

static void context_rows(const problem_t *p, const float *w, const float *v, const float *inv, float *out,
                         float *dst, int rows) {
    /* D in chunks of CONTEXT_NV vectors: one chunk with AVX-512 (D <= 64), up to four with AVX2 */
    for (long c0 = 0; c0 < p->d; c0 += W * CONTEXT_NV) {
        long left = (p->d - c0) / W;
        int nv = left < CONTEXT_NV ? (int)left : CONTEXT_NV;
#define TILE(R, NV) context_tile(p, w, v + c0, inv, out + c0, c0 ? NULL : dst, R, NV)
        switch (rows * 8 + nv) { ALL_CASES }
#undef TILE
    }
}

/* Items [first, last) in (head, row block) order; returns 0 when its scratch could not be allocated. */
static int run_items(const problem_t *p, long first, long last) {
    long d = p->d, s = p->s, spad = p->spad, lds = p->lds;
    /* scratch: this head's K^T (D, spad), then one tile of scores (ROWS, spad); rows lds apart */
    float *kt = aligned_alloc(64, sizeof(float) * (size_t)((d + ROWS) * lds));
    if (!kt) return 0;
    float *tile = kt + d * lds;
    long head = -1;
    for (long item = first; item < last; item++) {
        long h = item / p->blocks, i0 = (item % p->blocks) * ROWS;
        if (h != head) {
            head = h;
            const float *k = p->k + h * d;
            long whole = s / W * W;
            for (long t = 0; t < whole; t += W)
                for (long dd = 0; dd < d; dd += W) v_transpose(k + t * p->ld + dd, p->ld, kt + dd * lds + t, lds);
            for (long t = whole; t < s; t++)
                for (long dd = 0; dd < d; dd++) kt[dd * lds + t] = k[t * p->ld + dd];
            for (long t = s; t < spad; t++)
                for (long dd = 0; dd < d; dd++) kt[dd * lds + t] = 0.0f;
        }
        int rows = s - i0 < ROWS ? (int)(s - i0) : ROWS;
        score_rows(p, p->q + i0 * p->ld + h * d, kt, tile, rows);
        float inv[ROWS];
        float *dst = p->probs + (h * s + i0) * s;
        for (int r = 0; r < rows; r++) inv[r] = softmax_row(tile + r * lds, s);
        context_rows(p, tile, p->v + h * d, inv, p->ctx + i0 * p->ldc + h * d, dst, rows);
    }
    free(kt);
    return 1;
}

/* ---- LayerNorm: out = LayerNorm(x + residual) ----
 * x, residual, out (rows, h) with row strides ldx, ldr, ldo; gamma, beta (h); residual may be NULL.
 * Why: in the packed forward, the residual add inside oneDNN's matmul (a binary post-op), torch's LayerNorm and
 * the copy into the hidden-state stack cost a little more than this one pass, which adds the residual as it
 * reads and writes in place or straight into the stack (bench/attention.py, "output + residual + LN" rows: ~1 %
 * of that block at 512 tokens; the copy it saves is on top). The sum is rounded as
 * the reference rounds it (x + r, then the normalisation). Two passes for the variance, (v - mean)^2 rather
 * than E[v^2] - mean^2, so no cancellation: as close to a float64 LayerNorm as torch's is, while the two differ
 * from each other by up to ~1.5e-6 on outputs of order 1 (each rounds the mean and variance its own way). */
static inline __attribute__((always_inline)) vec sum_at(const float *x, const float *r, long j) {
    return r ? v_add(v_loadu(x + j), v_loadu(r + j)) : v_loadu(x + j);
}

static inline __attribute__((always_inline)) vec sum_lanes(lanes m, const float *x, const float *r, long j) {
    return r ? v_add(v_load_lanes(m, x + j), v_load_lanes(m, r + j)) : v_load_lanes(m, x + j);
}

/* One row; r is NULL or not at each call site, so each gets its own code without a test in the loops. */
static inline __attribute__((always_inline)) void layer_norm_row(const float *x, const float *r,
                                                                 const float *gamma, const float *beta,
                                                                 float *out, long h, float eps) {
    vec s0 = v_zero(), s1 = v_zero(); /* two accumulators: the adds need not wait for each other */
    long j = 0;
    for (; j + 2 * W <= h; j += 2 * W) {
        s0 = v_add(s0, sum_at(x, r, j));
        s1 = v_add(s1, sum_at(x, r, j + W));
    }
    for (; j + W <= h; j += W) s0 = v_add(s0, sum_at(x, r, j));
    long body = j;
    lanes tail = first_lanes(h - body);
    if (body < h) s0 = v_add(s0, sum_lanes(tail, x, r, body));
    vec mean = v_set(v_hsum(v_add(s0, s1)) / (float)h);
    s0 = v_zero();
    s1 = v_zero();
    for (j = 0; j + 2 * W <= h; j += 2 * W) {
        vec d0 = v_sub(sum_at(x, r, j), mean), d1 = v_sub(sum_at(x, r, j + W), mean);
        s0 = v_fmadd(d0, d0, s0);
        s1 = v_fmadd(d1, d1, s1);
    }
    for (; j + W <= h; j += W) {
        vec d0 = v_sub(sum_at(x, r, j), mean);
        s0 = v_fmadd(d0, d0, s0);
    }
    if (body < h) {
        vec d0 = v_keep(tail, v_sub(sum_lanes(tail, x, r, body), mean));
        s0 = v_fmadd(d0, d0, s0);
    }
    float var = v_hsum(v_add(s0, s1)) / (float)h;
    vec rstd = v_set(1.0f / _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(var + eps)))); /* sqrtss: no libm, no errno */
    for (j = 0; j < body; j += W) {
        vec y = v_mul(v_sub(sum_at(x, r, j), mean), rstd);
        v_storeu(out + j, v_fmadd(y, v_loadu(gamma + j), v_loadu(beta + j)));
    }
    if (body < h) {
        vec y = v_mul(v_sub(sum_lanes(tail, x, r, body), mean), rstd);
        v_store_lanes(tail, out + body, v_fmadd(y, v_load_lanes(tail, gamma + body), v_load_lanes(tail, beta + body)));
    }
}

/* Returns 0 on success, 1 for an unsupported shape. Each row is read whole before it is written, so out == x
 * or out == residual (in place) is safe; other overlaps are not. */
int bertscope_layer_norm(const float *x, long ldx, const float *residual, long ldr, const float *gamma,
                         const float *beta, float *out, long ldo, long rows, long h, float eps, int threads) {
    if (rows < 1 || h < 1 || ldx < h || ldo < h || (residual && ldr < h)) return 1;
    if (threads < 1) threads = 1;
    if (threads > rows) threads = (int)rows;
    if (residual) {
#pragma omp parallel for num_threads(threads) schedule(static)
        for (long i = 0; i < rows; i++)
            layer_norm_row(x + i * ldx, residual + i * ldr, gamma, beta, out + i * ldo, h, eps);
    } else {
#pragma omp parallel for num_threads(threads) schedule(static)
        for (long i = 0; i < rows; i++) layer_norm_row(x + i * ldx, NULL, gamma, beta, out + i * ldo, h, eps);
    }
    return 0;
}

/* Bumped whenever a signature or the meaning of an argument changes; fused.py checks it. */
int bertscope_attention_abi(void) { return 4; }

/* The lane count this library was built for (16: AVX-512, 8: AVX2). */
int bertscope_attention_lanes(void) { return W; }

/* Returns 0 on success, 1 for an unsupported shape, 2 when scratch memory could not be allocated. */
int bertscope_attention(const float *q, const float *k, const float *v, const float *mask, float *probs,
                        float *ctx, long s, long ld, long ldc, long n, long d, float scale, int threads) {
    if (d < 16 || d > 64 || d % 16 || s < 1 || n < 1 || ld < n * d || ldc < n * d) return 1;
    long blocks = (s + ROWS - 1) / ROWS, items = n * blocks;
    long spad = (s + W - 1) / W * W;
    /* Scratch rows a whole and odd number of cache lines apart: 2 KB apart (S = 512), the 64 write streams of the
     * K^T transpose all fell into two L1 sets, and the transpose took ~10 % of the kernel. */
    long lines = (spad + 15) / 16;
    long lds = (lines % 2 ? lines : lines + 1) * 16;
    problem_t p = {q, k, v, mask, probs, ctx, s, ld, ldc, d, spad, lds, blocks, scale};
    if (threads < 1) threads = 1;
    if (threads > items) threads = (int)items;
    int failed = 0;
#pragma omp parallel num_threads(threads) reduction(| : failed)
    {
        long t = omp_get_thread_num(), nt = omp_get_num_threads();
        failed |= !run_items(&p, items * t / nt, items * (t + 1) / nt);
    }
    return failed ? 2 : 0;
}
