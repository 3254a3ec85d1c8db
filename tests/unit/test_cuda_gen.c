/*
 * test_cuda_gen.c — generation on the CUDA backend: the tiny decoder of
 * decoder_model.h generates on the device with the fixed cache (one plan
 * for every decode step, its graph captured and replayed), the exact one,
 * and sampling, and gives the tokens the host backend's oracle gives; its
 * kv_cache charge returns to zero. The device's 2-D copy moves rows
 * between pitches. On a GPU machine with CUDAEP_TEST_GPU=1; elsewhere it
 * skips, visibly.
 */
#include "tests/unit/cuda_util.h"
#include "tests/unit/decoder_model.h"

#include "alloc/account.h"

static const int64_t prompt[] = { 2, 7, 1, 8, 2, 8 };
#define NP 6
#define NEW 40

static void oracle(int with_mask_pos, int64_t *ref)
{
	struct backend *be = NULL;
	engine_session *s = NULL;
	engine_model *m = dm_load(21, with_mask_pos);

	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0);
	dm_reference(s, with_mask_pos, prompt, NP, NEW, ref);
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}

static int device_gen(int with_mask_pos, const struct engine_gen_params *p, int64_t *out,
		      struct engine_gen_info *info, struct engine_stats *st)
{
	struct engine_session_options o = { 0 };
	struct account *acc = NULL;
	struct account_usage u;
	engine_model *m = dm_load(21, with_mask_pos);
	engine_session *s = NULL;
	engine_gen *g = NULL;
	int n = 0, ret;

	cr_assert_eq(account_new(&acc), 0);
	o.account = acc;
	o.owner = (struct alloc_owner){ 1, 1 };
	cr_assert_eq(engine_session_new(m, gpu_be, &o, &s), 0, "%s", cep_last_error());
	cr_assert_eq(engine_gen_new(s, prompt, NP, p, &g), 0, "%s", cep_last_error());
	do {
		ret = engine_gen_step(g, &out[n]);
		cr_assert_geq(ret, 0, "step %d: %s", n, cep_last_error());
		n++;
	} while (ret == 0);
	engine_gen_info(g, info);
	engine_session_stats(s, st);
	engine_gen_free(g);
	cr_assert_eq(account_usage_get(acc, o.owner, &u), 0);
	cr_assert_eq(u.current[ALLOC_ROLE_KV_CACHE], 0);
	engine_session_free(s);
	engine_model_unref(m);
	account_free(acc);
	return n;
}

TestSuite(cuda_gen, .init = gpu_setup, .fini = gpu_teardown);

Test(cuda_gen, greedy_on_the_device_equals_the_oracle)
{
	static const struct {
		int with_mask_pos;
		enum engine_kv_mode mode, want;
	} cases[] = {
		{ 1, ENGINE_KV_AUTO, ENGINE_KV_FIXED },
		{ 1, ENGINE_KV_EXACT, ENGINE_KV_EXACT },
		{ 0, ENGINE_KV_AUTO, ENGINE_KV_EXACT },
	};
	size_t k;

	GPU_REQUIRE();
	for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct engine_gen_params p = { .max_new_tokens = NEW, .kv_mode = cases[k].mode };
		int64_t ref[NEW], got[NEW];
		struct engine_gen_info info;
		struct engine_stats st;
		int i, n;

		oracle(cases[k].with_mask_pos, ref);
		n = device_gen(cases[k].with_mask_pos, &p, got, &info, &st);
		cr_assert_eq(n, NEW);
		cr_assert_eq(info.kv_mode, cases[k].want);
		for (i = 0; i < NEW; i++)
			cr_assert_eq(got[i], ref[i], "case %zu token %d: %lld, the oracle's %lld",
				     k, i, (long long)got[i], (long long)ref[i]);
		if (cases[k].want == ENGINE_KV_FIXED) {
			cr_assert_eq(st.plans_built, 2);
			/* Decode steps past the second replay the captured graph. */
			cr_assert_geq(st.graph_replays, NEW - 3, "%llu replays",
				      (unsigned long long)st.graph_replays);
		}
		fprintf(stderr, "cuda_gen: case %zu: %d tokens equal the host's; %llu plans, "
			"%llu replays\n", k, n, (unsigned long long)st.plans_built,
			(unsigned long long)st.graph_replays);
	}
}

Test(cuda_gen, sampling_on_the_device_is_the_hosts)
{
	struct engine_gen_params p = { .max_new_tokens = 24, .temperature = 1.2f, .top_k = 10,
				       .top_p = 0.9f, .seed = 9 };
	int64_t a[24], b[24];
	struct engine_gen_info info;
	struct engine_stats st;
	struct backend *be = NULL;
	engine_session *s = NULL;
	engine_model *m;
	engine_gen *g = NULL;
	int i, n = 0, ret;

	GPU_REQUIRE();
	cr_assert_eq(device_gen(1, &p, a, &info, &st), 24);
	/* The same on the host backend: the logits agree closely enough that
	 * the draws do (the sampler runs on the host either way). */
	m = dm_load(21, 1);
	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0);
	cr_assert_eq(engine_gen_new(s, prompt, NP, &p, &g), 0);
	do {
		ret = engine_gen_step(g, &b[n++]);
		cr_assert_geq(ret, 0);
	} while (ret == 0);
	engine_gen_free(g);
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
	for (i = 0; i < 24; i++)
		cr_assert_eq(a[i], b[i], "token %d: device %lld, host %lld", i, (long long)a[i],
			     (long long)b[i]);
}

Test(cuda_gen, copy_d2d_2d_moves_rows_between_pitches)
{
	unsigned char src[40], dst[30], *dsrc = NULL, *ddst = NULL;
	int i, r;

	GPU_REQUIRE();
	for (i = 0; i < 40; i++)
		src[i] = (unsigned char)i;
	memset(dst, 0xee, sizeof(dst));
	cr_assert_eq(backend_mem_alloc(gpu_be, 40, (void **)&dsrc), 0);
	cr_assert_eq(backend_mem_alloc(gpu_be, 30, (void **)&ddst), 0);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, dsrc, src, 40), 0);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, ddst, dst, 30), 0);
	cr_assert_eq(backend_copy_d2d_2d(gpu_be, gpu_s, ddst, 10, dsrc + 2, 13, 7, 3), 0,
		     "%s", cep_last_error());
	cr_assert_eq(backend_copy_d2h(gpu_be, gpu_s, dst, ddst, 30), 0);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0);
	for (r = 0; r < 3; r++) {
		for (i = 0; i < 10; i++)
			cr_assert_eq(dst[r * 10 + i], i < 7 ? 2 + r * 13 + i : 0xee);
	}
	backend_mem_free(gpu_be, dsrc, 40);
	backend_mem_free(gpu_be, ddst, 30);
}
