/*
 * model.c — loading and validating an ONNX model (engine/model.h).
 *
 * The file arrives as bytes from a client: everything in it is hostile
 * until checked. The order below is what keeps that cheap: a wire-format
 * scan bounds nesting and node count before protobuf-c allocates anything;
 * tensors are read by engine/model_data.c, which allocates only once the
 * bytes that fill a tensor are known to be there; then the graph and its
 * subgraphs are built and checked node by node (engine/model_graph.c),
 * and last inferred and optimized.
 */
#include "engine/model.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "engine/optimize.h"
#include "engine/shape.h"

struct load_ctx {
	struct model__ctx mc;
	struct model__declared *decl; /* (graph outputs) */
};

/* ------------------------------------------------------------- wire scan */

struct scan {
	size_t nodes;
	const uint8_t *base;
};

static bool wire_varint(const uint8_t *p, size_t len, size_t *at, uint64_t *v)
{
	uint64_t x = 0;
	int shift;

	for (shift = 0; *at < len && shift < 64; shift += 7) {
		uint8_t b = p[(*at)++];

		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return true;
		}
	}
	return false;
}

/*
 * Walks the message in p[0..len) field by field, descending into the
 * fields the descriptor says are messages, and fails on truncation, on
 * nesting beyond MODEL_MAX_DEPTH (protobuf-c recurses without a limit) and
 * on more than MODEL_MAX_NODES nodes, all before protobuf-c sees the bytes.
 */
static int scan_message(struct scan *s, const uint8_t *p, size_t len,
			const ProtobufCMessageDescriptor *desc, int depth)
{
	size_t at = 0;

	while (at < len) {
		const ProtobufCFieldDescriptor *fd;
		size_t start = at;
		uint64_t key, n;

		if (!wire_varint(p, len, &at, &key) || (key >> 3) == 0 || (key >> 3) > UINT32_MAX)
			goto bad;
		switch (key & 7) {
		case 0:
			if (!wire_varint(p, len, &at, &n))
				goto bad;
			break;
		case 1:
			if (len - at < 8)
				goto bad;
			at += 8;
			break;
		case 5:
			if (len - at < 4)
				goto bad;
			at += 4;
			break;
		case 2:
			if (!wire_varint(p, len, &at, &n) || n > len - at)
				goto bad;
			fd = desc ? protobuf_c_message_descriptor_get_field(desc, (unsigned)(key >> 3))
				  : NULL;
			if (fd && fd->type == PROTOBUF_C_TYPE_MESSAGE) {
				int ret;

				if (depth >= MODEL_MAX_DEPTH)
					return cep__set_error(CEP_EMODEL,
							      "not a valid ONNX model: messages nested more than %d deep",
							      MODEL_MAX_DEPTH);
				if (fd->descriptor == &onnx__node_proto__descriptor &&
				    ++s->nodes > MODEL_MAX_NODES)
					return cep__set_error(CEP_ELIMIT,
							      "the model has more than %d nodes",
							      MODEL_MAX_NODES);
				ret = scan_message(s, p + at, (size_t)n, fd->descriptor, depth + 1);
				if (ret < 0)
					return ret;
			}
			at += (size_t)n;
			break;
		default:
			goto bad;
		}
		continue;
bad:
		return cep__set_error(CEP_EMODEL,
				      "not a valid ONNX model: malformed or truncated protobuf at byte %zu",
				      (size_t)(p - s->base) + start);
	}
	return 0;
}

/* ------------------------------------------------------------ the header */

static int load_header(struct load_ctx *c)
{
	const Onnx__ModelProto *mp = c->mc.mp;
	struct model *m = c->mc.m;
	size_t i;
	int j;

	m->ir_version = mp->has_ir_version ? mp->ir_version : 0;
	if (!mp->graph)
		return cep__set_error(CEP_EMODEL, "not a valid ONNX model: no graph");
	if (mp->n_opset_import == 0)
		return cep__set_error(CEP_EMODEL, "the model imports no operator set (IR version %"
				      PRId64 "; cudaep needs 3 or later)", m->ir_version);
	m->opsets = graph_alloc(&m->g, sizeof(*m->opsets) * mp->n_opset_import);
	if (!m->opsets)
		return cep__set_error(CEP_ENOMEM, NULL);
	for (i = 0; i < mp->n_opset_import; i++) {
		const Onnx__OperatorSetIdProto *op = mp->opset_import[i];
		const char *d = op->domain ? op->domain : "";

		for (j = 0; j < m->n_opsets; j++) {
			if (op_domain_equal(m->opsets[j].domain, d))
				return cep__set_error(CEP_EMODEL, "the model imports domain %s twice",
						      op_domain_name(d));
		}
		if (!op->has_version || op->version < 1)
			return cep__set_error(CEP_EMODEL, "the model imports domain %s without a version",
					      op_domain_name(d));
		if (op_domain_equal(d, "") && op->version > OP_OPSET_MAX)
			return cep__set_error(CEP_EUNSUPPORTED,
					      "the model imports ai.onnx opset %" PRId64
					      "; this build supports opsets up to %d",
					      op->version, OP_OPSET_MAX);
		m->opsets[m->n_opsets].domain = graph_strdup(&m->g, d);
		m->opsets[m->n_opsets].version = op->version;
		if (!m->opsets[m->n_opsets].domain)
			return cep__set_error(CEP_ENOMEM, NULL);
		m->n_opsets++;
	}
	if (mp->producer_name) {
		char buf[128];

		snprintf(buf, sizeof(buf), "%s%s%s", mp->producer_name,
			 mp->producer_version && *mp->producer_version ? " " : "",
			 mp->producer_version ? mp->producer_version : "");
		m->producer = graph_strdup(&m->g, buf);
	} else {
		m->producer = graph_strdup(&m->g, "");
	}
	return m->producer ? 0 : cep__set_error(CEP_ENOMEM, NULL);
}

/* --------------------------------------------------------------- outputs */

/* After inference: declared output types must match; declared dims fill
 * in what inference could not know. */
static int check_outputs(struct load_ctx *c)
{
	struct graph *g = &c->mc.m->g;
	int i, d;

	for (i = 0; i < g->n_outputs; i++) {
		struct graph_value *v = &g->values[g->outputs[i]];
		const struct model__declared *dc = &c->decl[i];

		if (dc->elem_type && (int)v->t.dtype != dc->elem_type)
			return cep__set_error(CEP_EDTYPE,
					      "graph output '%s' is declared %s but computes %s",
					      v->name, model__type_name(dc->elem_type),
					      cep_dtype_name(v->t.dtype));
		if (dc->rank < 0)
			continue;
		if (v->t.rank < 0) {
			v->t.rank = dc->rank;
			for (d = 0; d < dc->rank; d++)
				v->t.dims[d] = dc->dims[d];
			continue;
		}
		if (v->t.rank != dc->rank)
			continue;
		for (d = 0; d < dc->rank; d++) {
			if (v->t.dims[d] == OP_DIM_UNKNOWN)
				v->t.dims[d] = dc->dims[d];
		}
	}
	return 0;
}

/* ------------------------------------------------------------------- load */

void model_free(struct model *m)
{
	if (!m)
		return;
	graph_close(&m->g);
	free(m);
}

int model_load(const void *bytes, size_t len, int dir_fd, struct model **out)
{
	struct load_ctx c = { .mc.dir_fd = dir_fd };
	struct scan scan = { .base = bytes };
	Onnx__ModelProto *mp = NULL;
	struct model *m = NULL;
	int ret;

	*out = NULL;
	model__wanted_dir = false;
	if (!bytes || len == 0)
		return cep__set_error(CEP_EMODEL, "not a valid ONNX model: the file is empty");
	if ((uint64_t)len > MODEL_MAX_BYTES)
		return cep__set_error(CEP_ELIMIT, "the model is %zu bytes, above the 2 GiB of protobuf",
				      len);
	ret = scan_message(&scan, bytes, len, &onnx__model_proto__descriptor, 0);
	if (ret < 0)
		return ret;
	mp = onnx__model_proto__unpack(NULL, len, bytes);
	if (!mp)
		return cep__set_error(CEP_EMODEL, "not a valid ONNX model: protobuf decoding failed");
	m = calloc(1, sizeof(*m));
	if (!m) {
		ret = cep__set_error(CEP_ENOMEM, NULL);
		goto out;
	}
	ret = graph_init(&m->g);
	if (ret < 0)
		goto out;
	c.mc.m = m;
	c.mc.mp = mp;
	ret = load_header(&c);
	if (ret < 0)
		goto out;
	ret = model__graph_load(&c.mc, mp->graph, &m->g, &c.decl);
	if (ret < 0)
		goto out;
	ret = shape_infer_graph(&m->g);
	if (ret < 0)
		goto out;
	ret = optimize_graph(&m->g);
	if (ret < 0)
		goto out;
	ret = check_outputs(&c);
	if (ret < 0)
		goto out;
	*out = m;
	m = NULL;
	ret = 0;
out:
	free(c.decl);
	model_free(m);
	onnx__model_proto__free_unpacked(mp, NULL);
	return ret;
}
