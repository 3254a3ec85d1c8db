/*
 * control.c — the schemas of ONNX's control flow: If (1-), Loop (1-) and
 * Scan (8, 9-). They are here so that the registry knows the operators
 * and their opsets like any other; what they compute is their subgraphs',
 * which only the engine sees, so they have no kernels and the engine
 * infers, plans and runs them itself (engine/ctrl.h, engine/plan_ctrl.c,
 * engine/exec_ctrl.c).
 *
 * The opsets after the first of each only widen the types (float8, and
 * sequences, optionals and types narrower than a byte, which cudaep does
 * not store) or, for If 11, allow the branches' shapes to differ, which
 * the engine allows at every opset; for tensors of the stored types their
 * meaning is one. Scan 8 differs from 9: a batch axis 0 and the optional
 * sequence_lens input, and no axes attributes; Scan 11 lets the axes count
 * from the end.
 */
#include "kernels/cpu/cpu.h"

/* Never called: shape.c and plan_ctrl.c infer these over their subgraphs. */
static int control_infer(struct op_infer *x)
{
	return cep__set_error(CEP_EINTERNAL, "%s is inferred over its subgraphs by the engine",
			      x->node->op_type);
}

#define CONTROL (OP_CONTROL | OP_NO_FOLD)
/* Outputs a node of control flow may have: as many as a node may. */
#define CONTROL_MAX_IO (1 << 20)

static const struct op_schema schemas[] = {
	{ "", "If", 1, OP_OPSET_MAX, 1, 1, 1, CONTROL_MAX_IO, 0, CONTROL, control_infer },
	/* M and cond are optional and may be omitted altogether. */
	{ "", "Loop", 1, OP_OPSET_MAX, 0, CONTROL_MAX_IO, 0, CONTROL_MAX_IO, -1, CONTROL,
	  control_infer },
	/* Scan 8's first input, sequence_lens, is optional. */
	{ "", "Scan", 8, 8, 0, CONTROL_MAX_IO, 1, CONTROL_MAX_IO, -1, CONTROL, control_infer },
	{ "", "Scan", 9, OP_OPSET_MAX, 1, CONTROL_MAX_IO, 1, CONTROL_MAX_IO, -1, CONTROL,
	  control_infer },
};

const struct op_family op_family_cpu_control = {
	"cpu_control", schemas, sizeof(schemas) / sizeof(schemas[0]), NULL, 0,
};
