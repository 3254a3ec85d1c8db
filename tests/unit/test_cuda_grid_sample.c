/*
 * test_cuda_grid_sample.c — the CUDA kernels of GridSample and AffineGrid
 * (kernels/cuda/grid_sample.c) against the reference kernels of
 * kernels/cpu/grid_sample.c on fresh random data, printing the worst
 * absolute and relative error of each call, which must be 0: the device
 * rounds every float32 step as the host does.
 *
 * GridSample: 1 to 4 spatial dims (4-D X at opset 16, the others at 20
 * and 22), every mode, padding mode and align_corners, X of every type
 * (NaN, infinities and extremes among the values), grids of float32 and
 * float16 (and bfloat16 at 22) reaching past the borders, with a few
 * special values. AffineGrid: 2-D and 3-D, both align_corners, every
 * float type, sizes of 1; a size other than the plan's fails the run with
 * the operator named.
 *
 * Everywhere: the registry gives both a CUDA kernel for each type and
 * opset the host has one for, and where NVRTC is installed (no device
 * needed) the kernels the launchers ask for are in the compiled source.
 * On a GPU machine with CUDAEP_TEST_GPU=1 the rest runs; elsewhere it
 * skips, visibly.
 */
#include "tests/unit/cuda_util.h"

#include "gpu/cuda/nvrtc.h"

static const cep_dtype all_types[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64,
	CEP_DTYPE_INT32, CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL,
};

#define N_TYPES (sizeof(all_types) / sizeof(all_types[0]))

static const char *const suffixes[] = { "f32", "f16", "bf16", "i64", "i32", "i8", "u8", "bool" };

/* ------------------------------------------------------------ everywhere */

static int covered(const char *op)
{
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	int opset, n = 0;
	size_t t;

	for (opset = 1; opset <= OP_OPSET_MAX; opset++) {
		if (op_schema_find("", op, opset, &s) != 0)
			continue;
		for (t = 0; t < N_TYPES; t++) {
			bool has_host = op_kernel_find(s, opset, BACKEND_HOST, all_types[t], &host) == 0;
			bool has_dev = op_kernel_find(s, opset, BACKEND_CUDA, all_types[t], &dev) == 0;

			cr_assert_eq(has_dev, has_host, "%s/%d %s: host %d, cuda %d", op, opset,
				     cep_dtype_name(all_types[t]), has_host, has_dev);
			n += has_dev;
		}
	}
	cep__clear_error();
	return n;
}

Test(cuda_grid_sample, the_device_covers_what_the_host_covers)
{
	/* GridSample: 7 types at 16-21, 8 from 22; AffineGrid: 3 from 20. */
	cr_assert_eq(covered("GridSample"), 7 * 6 + 8 * (OP_OPSET_MAX - 21));
	cr_assert_eq(covered("AffineGrid"), 3 * (OP_OPSET_MAX - 19));
}

Test(cuda_grid_sample, the_kernels_the_launchers_ask_for_exist)
{
	struct nvrtc_lib *lib = NULL;
	struct nvrtc_source src;
	char name[32];
	void *image;
	size_t size, x, g;

	if (nvrtc_lib_open(NULL, &lib) != 0)
		GPU_SKIP("skipped: needs NVRTC (no GPU needed); %s", cep_last_error());
	cr_assert_eq(cuda_source_get("grid_sample", &src), 0, "%s", cep_last_error());
	cr_assert_eq(nvrtc_compile(lib, &src, 90, &image, &size), 0, "%s", cep_last_error());
	for (x = 0; x < N_TYPES; x++) {
		for (g = 0; g < 3; g++) {
			snprintf(name, sizeof(name), "gs_%s_%s", suffixes[x], suffixes[g]);
			cr_assert(cuda_image_has(image, size, name), "grid_sample.cu has no kernel %s",
				  name);
		}
	}
	for (g = 0; g < 3; g++) {
		snprintf(name, sizeof(name), "ag_%s", suffixes[g]);
		cr_assert(cuda_image_has(image, size, name), "grid_sample.cu has no kernel %s", name);
	}
	free(image);
	nvrtc_lib_free(lib);
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_grid_sample, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

static int64_t rnd_in(unsigned *seed, int64_t lo, int64_t hi)
{
	return lo + (int64_t)(rnd(seed) % (unsigned)(hi - lo + 1));
}

/* A grid of dtype and shape: coordinates in [-1.4, 1.4], with -1, 0, 1,
 * half-way points and, when specials is set, a NaN or an infinity here
 * and there. */
static struct op_tensor grid_tensor(cep_dtype dtype, const char *shape, unsigned *seed,
				    bool specials)
{
	static const float exact[] = { -1.0f, 0.0f, 1.0f, 0.5f, -0.5f, 1.25f, -1.25f };
	struct op_tensor t = host_tensor(dtype, shape, seed, false);
	int64_t n = op_dims_product(&t, 0, t.rank), i;

	for (i = 0; i < n; i++) {
		unsigned r = rnd(seed);
		float v = (float)(r % 28001) / 10000.0f - 1.4f;

		if (r % 11 == 0)
			v = exact[(r >> 8) % (sizeof(exact) / sizeof(exact[0]))];
		if (specials && r % 101 == 0)
			v = (r >> 9) % 2 ? NAN : INFINITY;
		cpu_store_f(t.data, dtype, i, v);
	}
	return t;
}

/* Runs op on both backends and compares bit for bit (NaN matching NaN);
 * the mismatches. */
static int64_t check_exact(const char *op, int opset, const struct op_attr *attrs, int n_attrs,
			   const struct op_tensor *in, int n_in, const char *label)
{
	struct gpu_call d;
	char what[260];
	size_t bytes;
	int64_t bad;
	void *got;

	gpu_call_make(&d, op, opset, attrs, n_attrs, in, n_in, 1, -1);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0, "%s: %s", label,
		     cep_last_error());
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s: %s", label, cep_last_error());
	bytes = op_tensor_bytes(&d.ref[0]);
	got = malloc(bytes ? bytes : 1);
	dev_get(got, d.out[0].data, bytes);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
	snprintf(what, sizeof(what), "%s/%d %s", op, opset, label);
	bad = compare_tensor(what, &d.ref[0], got, 0.0, 0.0);
	free(got);
	gpu_call_free(&d);
	return bad;
}

Test(gpu_grid_sample, every_mode_padding_and_type_matches_the_host_bit_for_bit)
{
	static const char *const modes20[] = { "linear", "nearest", "cubic" };
	static const char *const modes16[] = { "bilinear", "nearest", "bicubic" };
	static const char *const pads[] = { "zeros", "border", "reflection" };
	unsigned shapes = 1717u, data = 59u ^ (unsigned)getpid();
	int64_t bad = 0;
	int r, k, m, p, al;
	size_t t;

	GPU_REQUIRE();
	for (r = 1; r <= 4; r++) {
		for (k = 0; k < 2; k++) {
			int64_t n = rnd_in(&shapes, 1, 2), c = rnd_in(&shapes, 1, 3), i;
			char xs[64], gs[64];
			size_t xa, ga;

			xa = (size_t)snprintf(xs, sizeof(xs), "%lld,%lld", (long long)n, (long long)c);
			ga = (size_t)snprintf(gs, sizeof(gs), "%lld", (long long)n);
			for (i = 0; i < r; i++) {
				xa += (size_t)snprintf(xs + xa, sizeof(xs) - xa, ",%lld",
						       (long long)rnd_in(&shapes, 1, r >= 3 ? 4 : 7));
				ga += (size_t)snprintf(gs + ga, sizeof(gs) - ga, ",%lld",
						       (long long)rnd_in(&shapes, 1, r >= 3 ? 3 : 6));
			}
			snprintf(gs + ga, sizeof(gs) - ga, ",%d", r);
			for (m = 0; m < 3; m++) {
				for (p = 0; p < 3; p++) {
					for (al = 0; al < 2; al++) {
						for (t = 0; t < N_TYPES; t++) {
							cep_dtype gt = (k + m + p) % 3 == 0 ? CEP_DTYPE_FLOAT16 :
								       CEP_DTYPE_FLOAT32;
							bool bf = all_types[t] == CEP_DTYPE_BFLOAT16;
							int opset = r == 2 && !bf && (m + p) % 2 ? 16 :
								    bf || (m + al) % 2 ? 22 : 20;
							struct op_attr at[3] = {
								{ .name = "mode", .type = OP_ATTR_STRING,
								  .s = opset < 20 ? modes16[m] : modes20[m] },
								{ .name = "padding_mode",
								  .type = OP_ATTR_STRING, .s = pads[p] },
								{ .name = "align_corners",
								  .type = OP_ATTR_INT, .i = al },
							};
							struct op_tensor in[2];
							char label[200];

							if (opset == 22 && (k + t) % 3 == 0)
								gt = CEP_DTYPE_BFLOAT16;
							in[0] = host_tensor(all_types[t], xs, &data, true);
							in[1] = grid_tensor(gt, gs, &data, k == 1);
							snprintf(label, sizeof(label),
								 "%s X[%s] %s grid[%s] %s %s align %d",
								 cep_dtype_name(all_types[t]), xs,
								 cep_dtype_name(gt), gs, at[0].s, pads[p], al);
							bad += check_exact("GridSample", opset, at, 3, in, 2,
									   label);
							free_all(in, 2);
						}
					}
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_grid_sample, affine_grid_matches_the_host_bit_for_bit)
{
	static const int64_t sizes[][5] = {
		{ 2, 3, 5, 7 }, { 1, 1, 1, 1 }, { 3, 2, 1, 4 }, { 2, 1, 3, 4, 5 }, { 1, 2, 1, 1, 6 },
	};
	static const cep_dtype types[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16,
					   CEP_DTYPE_BFLOAT16 };
	unsigned seed = 61u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t s, t;
	int al;

	GPU_REQUIRE();
	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		int count = sizes[s][4] != 0 ? 5 : 4, r = count - 2;

		for (t = 0; t < 3; t++) {
			for (al = 0; al < 2; al++) {
				struct op_attr at = { .name = "align_corners", .type = OP_ATTR_INT,
						      .i = al };
				struct op_tensor in[2];
				char shape[32], label[120];

				snprintf(shape, sizeof(shape), "%lld,%d,%d", (long long)sizes[s][0], r,
					 r + 1);
				in[0] = host_tensor(types[t], shape, &seed, false);
				in[1] = int64_tensor(sizes[s], count);
				snprintf(label, sizeof(label), "%s theta[%s] %d-D size %lld.. align %d",
					 cep_dtype_name(types[t]), shape, r, (long long)sizes[s][0], al);
				bad += check_exact("AffineGrid", 20, &at, 1, in, 2, label);
				free_all(in, 2);
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_grid_sample, an_affine_grid_size_other_than_the_plans_fails_the_run)
{
	static const int64_t size[4] = { 2, 3, 4, 5 }, other[4] = { 2, 3, 4, 6 };
	unsigned seed = 67u ^ (unsigned)getpid();
	struct op_tensor in[2];
	struct gpu_call d;

	GPU_REQUIRE();
	in[0] = host_tensor(CEP_DTYPE_FLOAT32, "2,2,3", &seed, false);
	in[1] = int64_tensor(size, 4);
	gpu_call_make(&d, "AffineGrid", 20, NULL, 0, in, 2, 1, -1);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[1].data, other, sizeof(other)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0, "%s",
		     cep_last_error());
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "AffineGrid: the values of its inputs give 6 elements "
			 "along dimension 2, where the plan made for the shapes has 5");
	printf("  a bad size: %s\n", cep_last_error());
	cr_assert_eq(backend_stream_fault(gpu_be, gpu_s), &d.call);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[1].data, size, sizeof(size)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
	gpu_call_free(&d);
	free_all(in, 2);
}
