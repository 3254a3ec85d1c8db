/*
 * test_cuda_inspect.c — the backend's kernels report (backend_kernels_get(),
 * iface.kernels): the host backend has none and says so, everywhere; on
 * the GPU (CUDAEP_TEST_GPU=1, else a visible skip) a kernel compiled
 * into a fresh cache directory is listed as compiled, with its arch,
 * compile and load time and image size, and a second backend over the
 * same directory lists it as read from disk.
 */
#include "tests/unit/cuda_util.h"

TestSuite(cuda_inspect, .init = gpu_setup, .fini = gpu_teardown, .timeout = 300);

Test(cuda_inspect, the_host_backend_has_no_device_kernels)
{
	struct backend_kernel_totals t;
	struct backend_kernel k[4];
	struct backend *be = NULL;
	size_t n = 99;

	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_null(be->iface.kernels);
	cr_assert_eq(backend_kernels_get(be, k, 4, &n, &t), CEP_ENOTSUP);
	cr_assert_eq(n, 0);
	cr_assert_eq(t.modules, 0);
	cr_assert_str_eq(cep_last_error(), "the host backend has no device kernels: it runs "
					   "the CPU reference kernels");
	backend_free(be);
}

/* Opens a backend over the kernel cache dir and gets add_f32 of
 * binary.cu through it; returns the report of its kernels. */
static void binary_with_cache(const char *dir, struct backend_kernel *k, size_t max,
			      size_t *n, struct backend_kernel_totals *t)
{
	struct backend_cuda_config cfg;
	CUfunction fn = NULL;

	gpu_teardown();
	backend_cuda_config_init(&cfg);
	cfg.cache_dir = dir;
	cr_assert_eq(backend_cuda_new_config(&cfg, &gpu_be), 0, "%s", cep_last_error());
	cr_assert_eq(backend_stream_new(gpu_be, CEP_PRIORITY_NORMAL, &gpu_s), 0);
	cr_assert_eq(backend_kernels_get(gpu_be, k, max, n, t), 0, "%s", cep_last_error());
	cr_assert_eq(*n, 0, "a new backend has loaded no kernels");
	cr_assert_eq(cuda_function_get(gpu_be, "binary", "add_f32", &fn), 0, "%s",
		     cep_last_error());
	/* Found again in memory: still one module. */
	cr_assert_eq(cuda_function_get(gpu_be, "binary", "sub_f32", &fn), 0, "%s",
		     cep_last_error());
	cr_assert_eq(backend_kernels_get(gpu_be, k, max, n, t), 0, "%s", cep_last_error());
	printf("  %s: %zu module(s), %llu compiles in %.1f ms, %llu disk hits\n",
	       *n > 0 ? k[0].name : "-", *n, (unsigned long long)t->compiles, t->compile_ns / 1e6,
	       (unsigned long long)t->disk_hits);
}

Test(cuda_inspect, a_compiled_kernel_is_listed_then_read_from_disk)
{
	char dir[] = "/tmp/cep-cuda-inspect-XXXXXX", cmd[128];
	struct backend_kernel_totals t;
	struct backend_kernel k[4];
	size_t n = 0;

	GPU_REQUIRE();
	cr_assert_not_null(mkdtemp(dir));
	binary_with_cache(dir, k, 4, &n, &t);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(k[0].name, "binary");
	cr_assert_eq(k[0].origin, BACKEND_KERNEL_COMPILED);
	cr_assert_eq(k[0].arch, cuda_backend_arch(gpu_be));
	cr_assert_gt(k[0].arch, 0);
	cr_assert_gt(k[0].compile_ns, 0);
	cr_assert_geq(k[0].load_ns, k[0].compile_ns);
	cr_assert_gt(k[0].image_bytes, 0);
	cr_assert_eq(t.arch, k[0].arch);
	cr_assert_eq(t.modules, 1);
	cr_assert_eq(t.compiles, 1);
	cr_assert_eq(t.compile_ns, k[0].compile_ns);
	cr_assert_eq(t.disk_hits, 0);
	cr_assert_eq(t.disk_writes, 1);
	cr_assert_eq(t.mem_hits, 1, "sub_f32 came from the loaded module");
	cr_assert_str_eq(t.cache_dir, dir);

	binary_with_cache(dir, k, 4, &n, &t);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(k[0].name, "binary");
	cr_assert_eq(k[0].origin, BACKEND_KERNEL_DISK);
	cr_assert_eq(k[0].compile_ns, 0);
	cr_assert_gt(k[0].load_ns, 0);
	cr_assert_gt(k[0].image_bytes, 0);
	cr_assert_eq(t.compiles, 0);
	cr_assert_eq(t.disk_hits, 1);

	/* max 0 counts without writing. */
	cr_assert_eq(backend_kernels_get(gpu_be, NULL, 0, &n, &t), 0);
	cr_assert_eq(n, 1);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}
