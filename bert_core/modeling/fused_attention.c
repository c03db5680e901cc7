/* Fused self-attention for CPU inference (AVX-512F, fp32): scores, softmax and context for one block of
 * query rows at a time, while that block is still in L1.
 *
 * Why a kernel of our own: with every attention map kept, bert-base at 512 tokens spends ~20 % of its forward in
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

/* Query rows per block. Both tiles hold 6 rows x 4 vectors = 24 accumulators of the 32 registers; 6 x 4 was
 * the fastest of 12 x 2, 8 x 3, 14 x 2 and 6 x 4 score tiles at 512 tokens. */
#define ROWS 6

typedef struct {
    const float *q, *k, *v, *mask;
    float *probs, *ctx;
    long s, ld, ldc, d, spad, lds, blocks; /* lds: row stride of the scratch */
    float scale;
} problem_t;

/* exp(x) for x <= 0 (arguments are x - rowmax). Below -104 the fp32 result is 0, as expf's is: padding keys
 * (mask = -FLT_MAX) get exactly zero weight. Degree-7 Taylor on |r| <= ln2/2: truncation error ~5e-9 relative,
 * below fp32's half-ulp. */
static inline __m512 exp_nonpositive(__m512 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(-104.0f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    /* ln 2 split in two so n * ln2_hi is exact for every n reached here */
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860682030941723212e-6f), r);
    __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n); /* p * 2^n, down to subnormals and zero */
}

static inline __mmask16 live_lanes(long j, long s) {
    return j + 16 <= s ? (__mmask16)0xFFFF : (j < s ? (__mmask16)((1u << (s - j)) - 1) : (__mmask16)0);
}

/* tile (rows, 16 * nvec) at column j0 = scale * q kt + mask. kt is this head's K^T, (D, spad) with row stride
 * lds, zero past S. rows and nvec are constants after inlining, so the accumulators stay in registers. */
static inline __attribute__((always_inline)) void score_tile(const problem_t *p, const float *q, const float *kt,
                                                             float *tile, int rows, int nvec, long j0) {
    __m512 acc[ROWS][4];
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < nvec; c++) acc[r][c] = _mm512_setzero_ps();
    for (long dd = 0; dd < p->d; dd++) {
        const float *krow = kt + dd * p->lds + j0;
        __m512 b[4];
        for (int c = 0; c < nvec; c++) b[c] = _mm512_load_ps(krow + 16 * c);
        for (int r = 0; r < rows; r++) {
            __m512 a = _mm512_set1_ps(q[r * p->ld + dd]);
            for (int c = 0; c < nvec; c++) acc[r][c] = _mm512_fmadd_ps(a, b[c], acc[r][c]);
        }
    }
    __m512 scale = _mm512_set1_ps(p->scale);
    for (int c = 0; c < nvec; c++) {
        long j = j0 + 16 * c;
        /* scale first, then the mask: the reference's order */
        __m512 m = p->mask ? _mm512_maskz_loadu_ps(live_lanes(j, p->s), p->mask + j) : _mm512_setzero_ps();
        for (int r = 0; r < rows; r++)
            _mm512_store_ps(tile + r * p->lds + j, _mm512_add_ps(_mm512_mul_ps(acc[r][c], scale), m));
    }
}

#define TILE_CASE(R, NV)                                                                                       \
    case R * 8 + NV:                                                                                           \
        TILE(R, NV);                                                                                           \
        break;
#define ROW_CASES(R) TILE_CASE(R, 1) TILE_CASE(R, 2) TILE_CASE(R, 3) TILE_CASE(R, 4)
#define ALL_CASES ROW_CASES(1) ROW_CASES(2) ROW_CASES(3) ROW_CASES(4) ROW_CASES(5) ROW_CASES(6)

static void score_rows(const problem_t *p, const float *q, const float *kt, float *tile, int rows) {
    for (long j0 = 0; j0 < p->spad; j0 += 64) {
        long left = (p->spad - j0) / 16;
        int nvec = left < 4 ? (int)left : 4;
#define TILE(R, NV) score_tile(p, q, kt, tile, R, NV, j0)
        switch (rows * 8 + nvec) { ALL_CASES }
#undef TILE
    }
}

/* One row of scores x (S valid of spad): writes softmax(x) to dst, leaves exp(x - max) in x (zero past S) for
 * the context, and returns 1 / sum. The context multiplies by it once per output instead of once per weight. */
static float softmax_row(float *x, long s, float *dst) {
    __m512 vmax = _mm512_set1_ps(-__builtin_inff());
    long j = 0;
    for (; j + 16 <= s; j += 16) vmax = _mm512_max_ps(vmax, _mm512_load_ps(x + j));
    __mmask16 tail = live_lanes(j, s);
    if (tail) vmax = _mm512_mask_max_ps(vmax, tail, vmax, _mm512_load_ps(x + j));
    __m512 mx = _mm512_set1_ps(_mm512_reduce_max_ps(vmax));
    __m512 sum = _mm512_setzero_ps();
    for (j = 0; j + 16 <= s; j += 16) {
        __m512 e = exp_nonpositive(_mm512_sub_ps(_mm512_load_ps(x + j), mx));
        _mm512_store_ps(x + j, e);
        sum = _mm512_add_ps(sum, e);
    }
    if (tail) {
        __m512 e = _mm512_maskz_mov_ps(tail, exp_nonpositive(_mm512_sub_ps(_mm512_load_ps(x + j), mx)));
        _mm512_store_ps(x + j, e);
        sum = _mm512_add_ps(sum, e);
    }
    float inv = 1.0f / _mm512_reduce_add_ps(sum);
    __m512 vinv = _mm512_set1_ps(inv);
    /* Streaming stores where aligned: the probabilities are not read again here, so they skip the cache (and
     * the read of each line before writing it); ~5 % of the kernel at 512 tokens. */
    if (((unsigned long)dst & 63) == 0)
        for (j = 0; j + 16 <= s; j += 16) _mm512_stream_ps(dst + j, _mm512_mul_ps(_mm512_load_ps(x + j), vinv));
    else
        for (j = 0; j + 16 <= s; j += 16) _mm512_storeu_ps(dst + j, _mm512_mul_ps(_mm512_load_ps(x + j), vinv));
    if (tail) _mm512_mask_storeu_ps(dst + j, tail, _mm512_mul_ps(_mm512_load_ps(x + j), vinv));
    return inv;
}

/* out (rows, 16 * nv) = (w (rows, S) @ v (S, 16 * nv)) * inv[row]; w rows are lds apart. */
static inline __attribute__((always_inline)) void context_tile(const problem_t *p, const float *w,
                                                               const float *v, const float *inv, float *out,
                                                               int rows, int nv) {
    __m512 acc[ROWS][4];
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < nv; c++) acc[r][c] = _mm512_setzero_ps();
    for (long j = 0; j < p->s; j++) {
        __m512 b[4];
        for (int c = 0; c < nv; c++) b[c] = _mm512_loadu_ps(v + j * p->ld + 16 * c);
        for (int r = 0; r < rows; r++) {
            __m512 a = _mm512_set1_ps(w[r * p->lds + j]);
            for (int c = 0; c < nv; c++) acc[r][c] = _mm512_fmadd_ps(a, b[c], acc[r][c]);
        }
    }
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < nv; c++)
            _mm512_storeu_ps(out + r * p->ldc + 16 * c, _mm512_mul_ps(acc[r][c], _mm512_set1_ps(inv[r])));
}

static void context_rows(const problem_t *p, const float *w, const float *v, const float *inv, float *out,
                         int rows) {
#define TILE(R, NV) context_tile(p, w, v, inv, out, R, NV)
    switch (rows * 8 + (int)(p->d / 16)) { ALL_CASES }
#undef TILE
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
            for (long t = 0; t < s; t++)
                for (long dd = 0; dd < d; dd++) kt[dd * lds + t] = k[t * p->ld + dd];
            for (long t = s; t < spad; t++)
                for (long dd = 0; dd < d; dd++) kt[dd * lds + t] = 0.0f;
        }
        int rows = s - i0 < ROWS ? (int)(s - i0) : ROWS;
        score_rows(p, p->q + i0 * p->ld + h * d, kt, tile, rows);
        float inv[ROWS];
        float *dst = p->probs + (h * s + i0) * s;
        for (int r = 0; r < rows; r++) inv[r] = softmax_row(tile + r * lds, s, dst + r * s);
        context_rows(p, tile, p->v + h * d, inv, p->ctx + i0 * p->ldc + h * d, rows);
    }
    _mm_sfence(); /* the streaming stores are visible before the caller reads the probabilities */
    free(kt);
    return 1;
}

/* Bumped whenever the signature or the meaning of an argument changes; fused.py checks it. */
int bertscope_attention_abi(void) { return 1; }

/* Returns 0 on success, 1 for an unsupported shape, 2 when scratch memory could not be allocated. */
int bertscope_attention(const float *q, const float *k, const float *v, const float *mask, float *probs,
                        float *ctx, long s, long ld, long ldc, long n, long d, float scale, int threads) {
    if (d < 16 || d > 64 || d % 16 || s < 1 || n < 1 || ld < n * d || ldc < n * d) return 1;
    long blocks = (s + ROWS - 1) / ROWS, items = n * blocks;
    long spad = (s + 15) / 16 * 16;
    /* Scratch rows an odd number of cache lines apart: 2 KB apart (S = 512), the 64 write streams of the K^T
     * transpose all fell into two L1 sets, and the transpose took ~10 % of the kernel. */
    long lds = spad / 16 % 2 ? spad : spad + 16;
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
