/*
 * test_registry.c — the operator registry: lookups by domain, op_type and
 * opset, kernels by backend and dtype, and the exact sentence of each
 * refusal, which is what a user sees when a model cannot run.
 */
#include <string.h>

#include <criterion/criterion.h>

#include "client/cudaep.h"
#include "kernels/registry.h"

Test(registry, finds_schemas_and_kernels)
{
	const struct op_schema *s;
	const struct op_kernel *k;

	cr_assert_eq(op_schema_find("", "Add", 14, &s), 0);
	cr_assert_str_eq(s->op_type, "Add");
	cr_assert_eq(op_schema_find("ai.onnx", "Add", 7, &s), 0, "ai.onnx is the default domain");
	cr_assert_eq(op_kernel_find(s, 14, BACKEND_HOST, CEP_DTYPE_FLOAT16, &k), 0);
	cr_assert_not_null(k->run);
	cr_assert_eq(op_kernel_find(s, 14, BACKEND_HOST, CEP_DTYPE_INT8, &k), 0);
}

Test(registry, refusals_say_exactly_why)
{
	const struct op_schema *s;
	const struct op_kernel *k;

	cr_assert_eq(op_schema_find("com.example", "Foo", 1, &s), CEP_EUNSUPPORTED);
	cr_assert_null(s);
	cr_assert_str_eq(cep_last_error(), "unknown op Foo in domain com.example");
	cr_assert_eq(op_schema_find("", "Foo", 13, &s), CEP_EUNSUPPORTED);
	cr_assert_str_eq(cep_last_error(), "unknown op Foo in domain ai.onnx");
	cr_assert_eq(op_schema_find("", "MatMul", 30, &s), CEP_EUNSUPPORTED);
	cr_assert_str_eq(cep_last_error(), "MatMul: opset 30 is not supported (supported 1-28)");
	/* uint16 is a type of Add from opset 14 on. */
	cr_assert_eq(op_schema_find("", "Add", 14, &s), 0);
	cr_assert_eq(op_kernel_find(s, 14, BACKEND_HOST, CEP_DTYPE_UINT16, &k), 0);
	cr_assert_eq(op_kernel_find(s, 13, BACKEND_HOST, CEP_DTYPE_UINT16, &k), CEP_EUNSUPPORTED);
	cr_assert_null(k);
	cr_assert_str_eq(cep_last_error(), "Add: dtype uint16 is not supported on the host backend "
					   "(supported: float32, float16, bfloat16, float64, int64, "
					   "int32, int8, uint64, uint32, uint8)");
	cr_assert_eq(op_kernel_find(s, 13, BACKEND_CUDA, CEP_DTYPE_UINT16, &k), CEP_EUNSUPPORTED);
	cr_assert_str_eq(cep_last_error(), "Add: dtype uint16 is not supported on the cuda backend "
					   "(supported: float32, float16, bfloat16, float64, int64, "
					   "int32, int8, uint64, uint32, uint8)");
	/* A device kernel that lacks a type the host takes says so. */
	cr_assert_eq(op_schema_find("", "Softmax", 13, &s), 0);
	cr_assert_eq(op_kernel_find(s, 13, BACKEND_CUDA, CEP_DTYPE_FLOAT64, &k), CEP_EUNSUPPORTED);
	cr_assert_str_eq(cep_last_error(), "Softmax: dtype float64 is not supported on the cuda "
					   "backend (supported: float32, float16, bfloat16)");
	/* Shape is always folded or evaluated on the host: no device kernel. */
	cr_assert_eq(op_schema_find("", "Shape", 15, &s), 0);
	cr_assert_eq(op_kernel_find(s, 15, BACKEND_CUDA, CEP_DTYPE_FLOAT32, &k), CEP_EUNSUPPORTED);
	cr_assert_str_eq(cep_last_error(), "Shape (opset 15) has no kernel on the cuda backend");
}

Test(registry, listing_is_sorted_and_complete)
{
	static const char *const starters[] = {
		"Add", "Sub", "Mul", "Div", "Relu", "Sigmoid", "Tanh", "Exp", "MatMul", "Gemm",
		"Softmax", "Reshape", "Transpose", "Identity", "Constant", "Shape", "Gather",
		"Unsqueeze", "Squeeze", "Concat", "Cast",
	};
	const struct op_schema *prev = NULL, *s;
	size_t i;
	int n, j;

	n = op_schema_count();
	cr_assert_geq(n, (int)(sizeof(starters) / sizeof(starters[0])));
	for (j = 0; j < n; j++) {
		s = op_schema_at(j);
		cr_assert_not_null(s->infer);
		if (prev && op_domain_equal(prev->domain, s->domain))
			cr_assert_leq(strcmp(prev->op_type, s->op_type), 0);
		prev = s;
	}
	cr_assert_null(op_schema_at(n));
	for (i = 0; i < sizeof(starters) / sizeof(starters[0]); i++) {
		const struct op_kernel *k;

		cr_assert_eq(op_schema_find("", starters[i], 13, &s), 0, "%s", starters[i]);
		cr_assert_eq(op_kernel_find(s, 13, BACKEND_HOST,
					    strcmp(starters[i], "Cast") ? CEP_DTYPE_FLOAT32
									: CEP_DTYPE_INT64, &k),
			     0, "%s", cep_last_error());
	}
}

Test(registry, dtype_sets_print_in_a_readable_order)
{
	char buf[128];

	op_dtypes_format(OP_DTS_ALL, buf, sizeof(buf));
	cr_assert_str_eq(buf, "float32, float16, bfloat16, float64, int64, int32, int16, int8, "
			      "uint64, uint32, uint16, uint8, bool");
	op_dtypes_format(0, buf, sizeof(buf));
	cr_assert_str_eq(buf, "");
	cr_assert(op_domain_equal("", "ai.onnx"));
	cr_assert_not(op_domain_equal("", "com.microsoft"));
	cr_assert_str_eq(op_domain_name(""), "ai.onnx");
}
