/*
 * run.c — the Run request, the hot path of libcudaep-client, above regions,
 * sessions and fences: check what a tensor needs to be encoded (the
 * daemon checks what it means), build the Run request in the client's
 * preallocated struct, send it with a fence booked in fence.c (or
 * without one, to a daemon that shared no fence page), and copy the
 * outputs' dtypes and shapes back from the reply. cep_run() is
 * cep_run_submit() and cep_fence_wait(). Nothing here allocates.
 */
#include "client/client_priv.h"
#include "common/error.h"

#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

/*
 * What a tensor needs to be encoded: a name that fits TensorRef.name, a
 * region of this client (whose id is what goes), a rank that fits
 * TensorRef.shape. The rest of a tensor's meaning (its dtype, its shape,
 * an input's bytes against its shape, a slice within its region) is cudaepd's to
 * check, at its trust boundary, and its error comes back through
 * cep_last_error(); the library does not repeat it.
 */
static int tensor_check(const cep_session *s, const cep_tensor *t, size_t i,
			bool output)
{
	const char *kind = output ? "output" : "input";

	/* Each check below guards what encoding would do: read the name,
	 * copy it into a fixed array, read the region's id, copy rank
	 * dimensions into a fixed array. */
	if (t->name == NULL)
		return cep__set_error(CEP_EINVAL, "%s #%zu has no name", kind, i);
	if (strlen(t->name) >= CEP_MAX_TENSOR_NAME)
		return cep__set_error(CEP_EINVAL,
				      "%s '%.40s...': name longer than %d bytes",
				      kind, t->name, CEP_MAX_TENSOR_NAME - 1);
	if (t->region == NULL)
		return cep__set_error(CEP_EINVAL, "%s '%s': no region", kind,
				      t->name);
	/* The handle is this library's: one of another client stands for
	 * nothing on this connection, whatever its id. */
	if (t->region->client != s->client)
		return cep__set_error(CEP_EINVAL,
				      "%s '%s': its region belongs to another "
				      "client",
				      kind, t->name);
	if (t->rank < 0 || t->rank > CEP_MAX_RANK)
		return cep__set_error(CEP_ESHAPE,
				      "%s '%s': rank %d (at most %d)", kind,
				      t->name, t->rank, CEP_MAX_RANK);
	return 0;
}

static void ref_from_tensor(cudaep_v1_TensorRef *ref, const cep_tensor *t)
{
	memcpy(ref->name, t->name, strlen(t->name) + 1);
	ref->region_id = t->region->id;
	ref->offset = t->offset;
	ref->bytes = t->bytes;
	ref->dtype = (cudaep_v1_DataType)t->dtype;
	ref->shape_count = (pb_size_t)t->rank;
	memcpy(ref->shape, t->shape, sizeof(t->shape[0]) * (size_t)t->rank);
}

/* The reply's entry for output name, looked for at index hint first since
 * a daemon naturally answers in the order asked. */
static int reply_find(const cudaep_v1_RunReply *rr, const char *name,
		      size_t hint)
{
	if (hint < rr->outputs_count && strcmp(rr->outputs[hint].name, name) == 0)
		return (int)hint;
	for (pb_size_t j = 0; j < rr->outputs_count; j++)
		if (strcmp(rr->outputs[j].name, name) == 0)
			return (int)j;
	return -1;
}

/* Fills outputs from the reply, checking the whole reply before writing
 * any output, so a bad reply leaves the caller's tensors as they were.
 * need: the run failed with CEP_ENOSPC and the reply gives the room each
 * output needs, which exceeds what is there by definition. */
static int outputs_fill(cep_tensor *outputs, size_t n,
			const cudaep_v1_RunReply *rr, bool need)
{
	int match[CEP_MAX_IO];

	for (size_t i = 0; i < n; i++) {
		const cudaep_v1_TensorRef *ref;

		match[i] = reply_find(rr, outputs[i].name, i);
		if (match[i] < 0)
			return cep__set_error(CEP_EPROTO,
					      "cudaepd's run reply lacks output "
					      "'%s'",
					      outputs[i].name);
		ref = &rr->outputs[match[i]];
		if (!need && ref->bytes > (uint64_t)outputs[i].bytes)
			return cep__set_error(CEP_EPROTO,
					      "cudaepd reports %" PRIu64
					      " bytes written to output '%s', "
					      "which has room for %zu",
					      ref->bytes, outputs[i].name,
					      outputs[i].bytes);
	}
	for (size_t i = 0; i < n; i++) {
		const cudaep_v1_TensorRef *ref = &rr->outputs[match[i]];
		cep_tensor *t = &outputs[i];

		t->dtype = (cep_dtype)ref->dtype;
		t->rank = (int)ref->shape_count;
		memcpy(t->shape, ref->shape,
		       sizeof(t->shape[0]) * ref->shape_count);
		t->bytes = (size_t)ref->bytes;
	}
	return 0;
}

static int run_check(const cep_session *s, const cep_tensor *inputs, size_t n_inputs,
		     const cep_tensor *outputs, size_t n_outputs)
{
	int ret;

	if ((n_inputs > 0 && inputs == NULL) ||
	    (n_outputs > 0 && outputs == NULL))
		return cep__set_error(CEP_EINVAL, "cep_run: tensors are NULL");
	/* Run.inputs and Run.outputs are arrays of CEP_MAX_IO. */
	if (n_inputs > CEP_MAX_IO || n_outputs > CEP_MAX_IO)
		return cep__set_error(CEP_ELIMIT,
				      "%zu inputs and %zu outputs; a run takes "
				      "at most %d of each",
				      n_inputs, n_outputs, CEP_MAX_IO);
	for (size_t i = 0; i < n_inputs; i++) {
		ret = tensor_check(s, &inputs[i], i, false);
		if (ret != 0)
			return ret;
	}
	for (size_t i = 0; i < n_outputs; i++) {
		ret = tensor_check(s, &outputs[i], i, true);
		if (ret != 0)
			return ret;
	}
	return 0;
}

/* Builds the Run with fence_seq and calls the daemon with the lock held;
 * fills outputs from the reply (also for CEP_ENOSPC). */
static int run_call(cep_session *s, const cep_tensor *inputs, size_t n_inputs,
		    cep_tensor *outputs, size_t n_outputs, uint64_t fence_seq)
{
	struct cep__conn *t = &s->client->conn;
	cudaep_v1_Request *req;
	cudaep_v1_Run *run;
	int ret;

	/* Every field that is encoded is set below; clearing the whole Run
	 * body (tens of KiB) would cost more than the call. */
	req = cep__conn_req(t, cudaep_v1_Request_run_tag, 0);
	run = &req->body.run;
	run->session_id = s->id;
	run->fence_seq = fence_seq;
	run->inputs_count = (pb_size_t)n_inputs;
	run->outputs_count = (pb_size_t)n_outputs;
	for (size_t i = 0; i < n_inputs; i++)
		ref_from_tensor(&run->inputs[i], &inputs[i]);
	for (size_t i = 0; i < n_outputs; i++)
		ref_from_tensor(&run->outputs[i], &outputs[i]);
	ret = cep__conn_call(t, req, NULL, 0, t->resp,
			     cudaep_v1_Response_run_tag);
	if (ret == 0)
		ret = outputs_fill(outputs, n_outputs, &t->resp->body.run, false);
	else if (ret == CEP_ENOSPC &&
		 t->resp->which_body == cudaep_v1_Response_run_tag &&
		 outputs_fill(outputs, n_outputs, &t->resp->body.run, true) != 0)
		ret = CEP_EPROTO;
	return ret;
}

int cep_run_submit(cep_session *s, const cep_tensor *inputs, size_t n_inputs,
		   cep_tensor *outputs, size_t n_outputs, cep_fence *fence)
{
	cep_client *c;
	uint64_t seq = 0;
	int ret;

	if (fence == NULL)
		return cep__set_error(CEP_EINVAL, "cep_run_submit: fence is NULL");
	fence->client = NULL;
	fence->seq = 0;
	if (s == NULL)
		return cep__set_error(CEP_EINVAL, "cep_run_submit: session is NULL");
	ret = run_check(s, inputs, n_inputs, outputs, n_outputs);
	if (ret != 0)
		return ret;
	c = s->client;
	pthread_mutex_lock(&c->conn.lock);
	/* A daemon without fence pages answers once the run is done: the
	 * run goes with fence 0. */
	if (c->fences.page != NULL)
		ret = cep__fence_book(c, &seq);
	if (ret == 0) {
		ret = run_call(s, inputs, n_inputs, outputs, n_outputs, seq);
		if (ret != 0 && seq != 0)
			cep__fence_unbook(c, seq);
	}
	pthread_mutex_unlock(&c->conn.lock);
	if (ret == 0) {
		fence->client = c;
		fence->seq = seq;
	}
	return ret;
}

int cep_run(cep_session *s, const cep_tensor *inputs, size_t n_inputs,
	    cep_tensor *outputs, size_t n_outputs)
{
	cep_fence f;
	int ret;

	ret = cep_run_submit(s, inputs, n_inputs, outputs, n_outputs, &f);
	if (ret != 0)
		return ret;
	return cep_fence_wait(&f, CEP_WAIT_FOREVER);
}
