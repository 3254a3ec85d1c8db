/*
 * families.h — every operator family linked into cudaepd, one line each:
 * OP_FAMILY(name) stands for `const struct op_family op_family_<name>`,
 * defined in kernels/cpu/<name>.c (reference kernels with the schemas) or
 * kernels/cuda/<name>.c (device kernels only). kernels/registry.c expands
 * this list; adding a family is adding its line here.
 */
OP_FAMILY(cpu_binary)
OP_FAMILY(cpu_unary)
OP_FAMILY(cpu_matmul)
OP_FAMILY(cpu_softmax)
OP_FAMILY(cpu_reshape)
OP_FAMILY(cpu_transpose)
OP_FAMILY(cpu_constant)
OP_FAMILY(cpu_gather)
OP_FAMILY(cpu_concat)
OP_FAMILY(cpu_cast)
OP_FAMILY(cpu_math)
OP_FAMILY(cpu_activation)
OP_FAMILY(cpu_compare)
OP_FAMILY(cpu_variadic)
OP_FAMILY(cpu_powmod)
OP_FAMILY(cpu_slice)
OP_FAMILY(cpu_split)
OP_FAMILY(cpu_expand)
OP_FAMILY(cpu_gather_elements)
OP_FAMILY(cpu_generate)
OP_FAMILY(cpu_castlike)
OP_FAMILY(cpu_reduce)
OP_FAMILY(cpu_argmax)
OP_FAMILY(cpu_logsoftmax)
OP_FAMILY(cpu_norm)
OP_FAMILY(cpu_dropout)
OP_FAMILY(cpu_conv)
OP_FAMILY(cpu_pool)
OP_FAMILY(cpu_pad)
OP_FAMILY(cpu_resize)
