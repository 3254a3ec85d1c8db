/*
 * test_cuda_kpack.c — the prebuilt kernels as the CUDA backend uses them
 * (gpu/cuda/kpack.h, nvrtc_cache_use_pack()), on the GPU (CUDAEP_TEST_GPU=1,
 * else a visible skip). A pack holding the device's CUBIN of a source is
 * loaded from and nothing compiles; PTX of an earlier architecture is
 * loaded too (the driver compiles it); an image the driver refuses is
 * counted and the source compiled instead; a pack without the device's
 * architecture says so. The kernel cache directory is off throughout, so
 * every image comes from the pack or from NVRTC.
 */
#include "tests/unit/cuda_util.h"

#include "gpu/cuda/kpack.h"

#include <xxhash.h>

TestSuite(cuda_kpack, .init = gpu_setup, .fini = gpu_teardown, .timeout = 300);

/* The source every test loads: small, so that its compiles are quick. */
#define SRC "concat"
#define FUNC "copy2d_4"

static char dir[64], pack[128];

/* Writes a pack of one image of SRC: its CUBIN for sm_<arch>, or its PTX
 * for compute_<arch>; junk: as many bytes of nonsense, with a right hash. */
static void pack_of(uint32_t kind, int arch, bool junk)
{
	struct nvrtc_lib *lib = NULL;
	struct nvrtc_source src;
	struct kpack_image img = { .name = SRC };
	void *image = NULL;
	size_t n = 0;
	char opts[256];

	snprintf(dir, sizeof(dir), "/tmp/cep-cuda-kpack-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(pack, sizeof(pack), "%s/kernels.pack", dir);
	cr_assert_eq(cuda_source_get(SRC, &src), 0, "%s", cep_last_error());
	cr_assert_eq(nvrtc_lib_open(NULL, &lib), 0, "%s", cep_last_error());
	if (kind == KPACK_PTX) {
		cr_assert_eq(nvrtc_compile_ptx(lib, &src, arch, &image, &n), 0, "%s",
			     cep_last_error());
		nvrtc_options_ptx(arch, opts, sizeof(opts));
	} else {
		cr_assert_eq(nvrtc_compile(lib, &src, arch, &image, &n), 0, "%s",
			     cep_last_error());
		nvrtc_options(arch, opts, sizeof(opts));
	}
	if (junk)
		memset(image, 0x5a, n);
	img.src_hash = nvrtc_source_hash(&src);
	img.opt_hash = XXH3_64bits(opts, strlen(opts));
	img.arch = (uint32_t)arch;
	img.kind = kind;
	img.data = image;
	img.bytes = n;
	cr_assert_eq(kpack_write(pack, &img, 1, (uint32_t)nvrtc_lib_version(lib)), 0, "%s",
		     cep_last_error());
	free(image);
	nvrtc_lib_free(lib);
}

/* Opens a backend over the pack, without a cache directory, gets FUNC of
 * SRC and returns the report of its kernels. */
static void load_through_pack(struct backend_kernel *k, struct backend_kernel_totals *t)
{
	struct backend_cuda_config cfg;
	CUfunction fn = NULL;
	size_t n = 0;

	gpu_teardown();
	backend_cuda_config_init(&cfg);
	cfg.cache_dir = "";
	cfg.kernel_pack = pack;
	cr_assert_eq(backend_cuda_new_config(&cfg, &gpu_be), 0, "%s", cep_last_error());
	cr_assert_eq(cuda_function_get(gpu_be, SRC, FUNC, &fn), 0, "%s", cep_last_error());
	cr_assert_not_null(fn);
	cr_assert_eq(backend_kernels_get(gpu_be, k, 1, &n, t), 0, "%s", cep_last_error());
	cr_assert_eq(n, 1);
	printf("  %s: origin %d, %llu compiles, %llu prebuilt, %llu refused; pack '%s' %s\n",
	       k->name, (int)k->origin, (unsigned long long)t->compiles,
	       (unsigned long long)t->prebuilt_hits, (unsigned long long)t->prebuilt_rejects,
	       t->pack, t->pack_note);
}

static void cleanup(void)
{
	char cmd[128];

	gpu_teardown();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

Test(cuda_kpack, the_devices_cubin_is_loaded_and_nothing_compiles)
{
	struct backend_kernel_totals t;
	struct backend_kernel k;

	GPU_REQUIRE();
	pack_of(KPACK_CUBIN, cuda_backend_arch(gpu_be), false);
	load_through_pack(&k, &t);
	cr_assert_str_eq(k.name, SRC);
	cr_assert_eq(k.origin, BACKEND_KERNEL_PREBUILT);
	cr_assert_eq(k.compile_ns, 0);
	cr_assert_eq(t.compiles, 0);
	cr_assert_eq(t.prebuilt_hits, 1);
	cr_assert_eq(t.prebuilt_rejects, 0);
	cr_assert_str_eq(t.pack, pack);
	cr_assert_str_eq(t.pack_note, "");
	cleanup();
}

Test(cuda_kpack, ptx_of_an_earlier_architecture_is_loaded)
{
	struct backend_kernel_totals t;
	struct backend_kernel k;

	GPU_REQUIRE();
	cr_assert_geq(cuda_backend_arch(gpu_be), 80);
	pack_of(KPACK_PTX, 80, false);
	load_through_pack(&k, &t);
	cr_assert_eq(k.origin, BACKEND_KERNEL_PREBUILT);
	cr_assert_eq(t.compiles, 0, "the driver compiled the PTX, NVRTC nothing");
	cr_assert_eq(t.prebuilt_hits, 1);
	cleanup();
}

Test(cuda_kpack, an_image_the_driver_refuses_is_compiled_instead)
{
	struct backend_kernel_totals t;
	struct backend_kernel k;

	GPU_REQUIRE();
	pack_of(KPACK_CUBIN, cuda_backend_arch(gpu_be), true);
	load_through_pack(&k, &t);
	cr_assert_eq(k.origin, BACKEND_KERNEL_COMPILED);
	cr_assert_eq(t.prebuilt_rejects, 1);
	cr_assert_eq(t.prebuilt_hits, 0);
	cr_assert_eq(t.compiles, 1);
	cleanup();
}

Test(cuda_kpack, a_pack_without_the_devices_architecture_says_so)
{
	struct backend_kernel_totals t;
	struct backend_kernel k;
	int arch;

	GPU_REQUIRE();
	/* A CUBIN of another major version: never runs here. */
	arch = cuda_backend_arch(gpu_be) / 10 == 8 ? 90 : 80;
	pack_of(KPACK_CUBIN, arch, false);
	load_through_pack(&k, &t);
	cr_assert_eq(k.origin, BACKEND_KERNEL_COMPILED);
	cr_assert_eq(t.compiles, 1);
	cr_assert_eq(t.prebuilt_hits, 0);
	cr_assert_eq(t.prebuilt_rejects, 0, "not even tried");
	cr_assert_not_null(strstr(t.pack_note, "has no CUBIN for sm_"), "%s", t.pack_note);
	cleanup();
}

Test(cuda_kpack, a_missing_pack_is_noted_and_kernels_compile)
{
	struct backend_kernel_totals t;
	struct backend_kernel k;

	GPU_REQUIRE();
	snprintf(dir, sizeof(dir), "/tmp/cep-cuda-kpack-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(pack, sizeof(pack), "%s/none.pack", dir);
	load_through_pack(&k, &t);
	cr_assert_eq(k.origin, BACKEND_KERNEL_COMPILED);
	cr_assert_str_eq(t.pack, "");
	cr_assert_not_null(strstr(t.pack_note, "none.pack"), "%s", t.pack_note);
	cleanup();
}
