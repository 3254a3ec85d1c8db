/*
 * test_client_session.c — sessions and runs against the fake daemon: what
 * LoadModel carries (fds of the model and its directory, options, default
 * name), the tensor lists decoded through nanopb callbacks (fixed and
 * symbolic dims, lists long enough to grow), load failures, Unload, what
 * cep_run checks itself (what it needs to encode a Run: each error names
 * its tensor and nothing is sent; what a tensor means is the daemon's to
 * check, test_client_run.c), the Run request as built, and outputs filled
 * from the reply.
 */
#include "tests/unit/fakedaemon.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(client_session, .timeout = 30);

#define N_EXTRA 10 /* inputs beyond the first two: the list must grow */

static struct fake_daemon fake;
static char model_dir[64];
static char model_path[128];

/* What the fake saw, and how it should answer. */
static struct {
	int nfds;
	bool has_dir_fd;
	bool dir_is_model_dir;  /* fds[1] is the directory of the model */
	char model_bytes[32];   /* read through fds[0] */
	cudaep_v1_SessionOptions options;
	uint64_t unloaded;
	int load_code;          /* refuse loads with this, 0 to accept */
	bool omit_info;
	int runs;
	cudaep_v1_Run run;      /* the last Run request */
	int run_mode;           /* 0 normal, 1 drop an output, 2 overfill */
} seen;

static cudaep_v1_TensorInfo inputs[2 + N_EXTRA];
static cudaep_v1_TensorInfo outputs[1];

static void make_tensor_lists(void)
{
	cudaep_v1_TensorInfo *x = &inputs[0], *mask = &inputs[1];
	cudaep_v1_TensorInfo *y = &outputs[0];

	memset(inputs, 0, sizeof(inputs));
	memset(outputs, 0, sizeof(outputs));
	snprintf(x->name, sizeof(x->name), "x");
	x->dtype = cudaep_v1_DataType_DT_FLOAT;
	x->shape_count = 4;
	x->shape[0].which_kind = cudaep_v1_Dim_param_tag;
	snprintf(x->shape[0].kind.param, sizeof(x->shape[0].kind.param), "batch");
	for (int i = 1; i < 4; i++) {
		x->shape[i].which_kind = cudaep_v1_Dim_value_tag;
		x->shape[i].kind.value = i == 1 ? 3 : 224;
	}
	snprintf(mask->name, sizeof(mask->name), "mask");
	mask->dtype = cudaep_v1_DataType_DT_INT64;
	mask->shape_count = 3;
	mask->shape[0].which_kind = cudaep_v1_Dim_value_tag;
	mask->shape[0].kind.value = 1;
	mask->shape[1].which_kind = cudaep_v1_Dim_param_tag;
	snprintf(mask->shape[1].kind.param, sizeof(mask->shape[1].kind.param),
		 "seq");
	/* Neither kind set: a dimension the model leaves unnamed. */
	mask->shape[2].which_kind = 0;
	for (int i = 0; i < N_EXTRA; i++) {
		cudaep_v1_TensorInfo *t = &inputs[2 + i];

		snprintf(t->name, sizeof(t->name), "extra%d", i);
		t->dtype = cudaep_v1_DataType_DT_UINT8;
	}
	snprintf(y->name, sizeof(y->name), "y");
	y->dtype = cudaep_v1_DataType_DT_FLOAT;
	y->shape_count = 2;
	y->shape[0].which_kind = cudaep_v1_Dim_param_tag;
	snprintf(y->shape[0].kind.param, sizeof(y->shape[0].kind.param), "batch");
	y->shape[1].which_kind = cudaep_v1_Dim_value_tag;
	y->shape[1].kind.value = 1000;
}

static enum fake_action load(struct fake_daemon *f, const int *fds, int nfds,
			     const cudaep_v1_LoadModel *lm,
			     cudaep_v1_Response *resp)
{
	cudaep_v1_SessionInfoReply *info = &resp->body.load_model.info;
	struct stat a, b;
	ssize_t n;

	seen.nfds = nfds;
	seen.has_dir_fd = lm->has_dir_fd;
	seen.options = lm->options;
	memset(seen.model_bytes, 0, sizeof(seen.model_bytes));
	if (nfds >= 1) {
		n = pread(fds[0], seen.model_bytes, sizeof(seen.model_bytes) - 1, 0);
		if (n < 0)
			seen.model_bytes[0] = '\0';
	}
	seen.dir_is_model_dir = nfds == 2 && fstat(fds[1], &a) == 0 &&
				stat(model_dir, &b) == 0 && S_ISDIR(a.st_mode) &&
				a.st_ino == b.st_ino && a.st_dev == b.st_dev;
	if (seen.load_code != 0) {
		fake_error(resp, seen.load_code,
			   "node 'Conv_0': op Conv opset 22 is not supported");
		return FAKE_REPLY;
	}
	resp->which_body = cudaep_v1_Response_load_model_tag;
	if (seen.omit_info)
		return FAKE_REPLY;
	resp->body.load_model.has_info = true;
	info->session_id = 42;
	snprintf(info->name, sizeof(info->name), "%s", lm->options.name);
	fake_session_info(f, info, inputs, 2 + N_EXTRA, outputs, 1);
	return FAKE_REPLY;
}

static enum fake_action run(const cudaep_v1_Run *r, cudaep_v1_Response *resp)
{
	cudaep_v1_RunReply *rr = &resp->body.run;

	seen.runs++;
	seen.run = *r;
	resp->which_body = cudaep_v1_Response_run_tag;
	/* Answer in reverse order: the client must match by name. */
	rr->outputs_count = r->outputs_count;
	for (pb_size_t i = 0; i < r->outputs_count; i++) {
		cudaep_v1_TensorRef *o = &rr->outputs[r->outputs_count - 1 - i];

		*o = r->outputs[i];
		o->dtype = cudaep_v1_DataType_DT_FLOAT;
		o->shape_count = 2;
		o->shape[0] = 2;
		o->shape[1] = 1000 + (int64_t)i;
		o->bytes = 2 * (1000 + i) * 4;
		if (seen.run_mode == 2)
			o->bytes = r->outputs[i].bytes + 1;
	}
	if (seen.run_mode == 1)
		rr->outputs_count--;
	return FAKE_REPLY;
}

static enum fake_action sessions(struct fake_daemon *f,
				 const cudaep_v1_Request *req, int *fds,
				 int nfds, cudaep_v1_Response *resp)
{
	switch (req->which_body) {
	case cudaep_v1_Request_load_model_tag:
		return load(f, fds, nfds, &req->body.load_model, resp);
	case cudaep_v1_Request_unload_tag:
		seen.unloaded = req->body.unload.session_id;
		break;
	case cudaep_v1_Request_register_region_tag:
		resp->which_body = cudaep_v1_Response_register_region_tag;
		resp->body.register_region.region_id = 100 + (uint64_t)f->requests;
		return FAKE_REPLY;
	case cudaep_v1_Request_run_tag:
		return run(&req->body.run, resp);
	}
	return fake_default(f, req, fds, nfds, resp);
}

static cep_client *setup(void)
{
	cep_client *c = NULL;
	FILE *m;

	make_tensor_lists();
	snprintf(model_dir, sizeof(model_dir), "/tmp/cep-model-XXXXXX");
	cr_assert_not_null(mkdtemp(model_dir));
	snprintf(model_path, sizeof(model_path), "%s/model.onnx", model_dir);
	m = fopen(model_path, "w");
	cr_assert_not_null(m);
	fputs("onnx-bytes", m);
	fclose(m);
	cr_assert_eq(fake_start(&fake, sessions, NULL), 0, "%s", strerror(errno));
	cr_assert_eq(cep_connect(fake.path, "sessions", &c), 0, "%s",
		     cep_last_error());
	return c;
}

static void teardown(cep_client *c)
{
	cep_close(c);
	fake_stop(&fake);
	unlink(model_path);
	rmdir(model_dir);
}

static cep_session *load_ok(cep_client *c)
{
	cep_session *s = NULL;
	int rc = cep_session_load(c, model_path, NULL, &s);

	cr_assert_eq(rc, 0, "load: %s: %s", cep_err_name(rc), cep_last_error());
	cr_assert_not_null(s);
	return s;
}

/* ---------------------------------------------------------------- load */

Test(client_session, load_passes_fds_and_decodes_tensor_lists)
{
	cep_client *c = setup();
	cep_session_options opts = {.name = "resnet", .precision = CEP_PRECISION_FP16,
				    .priority = CEP_PRIORITY_HIGH,
				    .memory_limit = 1 << 20};
	const cep_tensor_info *t;
	cep_session *s = NULL;

	cr_assert_eq(cep_session_load(c, model_path, &opts, &s), 0, "%s",
		     cep_last_error());
	cr_expect_eq(seen.nfds, 2);
	cr_expect(seen.has_dir_fd);
	cr_expect(seen.dir_is_model_dir, "second fd is not the model's directory");
	cr_expect_str_eq(seen.model_bytes, "onnx-bytes");
	cr_expect_str_eq(seen.options.name, "resnet");
	cr_expect_eq(seen.options.precision, cudaep_v1_Precision_PRECISION_FP16);
	cr_expect_eq(seen.options.priority, cudaep_v1_Priority_PRIORITY_HIGH);
	cr_expect_eq(seen.options.memory_limit, 1 << 20);

	cr_expect_eq(cep_session_id(s), 42);
	cr_assert_eq(cep_session_input_count(s), 2 + N_EXTRA);
	cr_assert_eq(cep_session_output_count(s), 1);

	t = cep_session_input(s, 0);
	cr_expect_str_eq(t->name, "x");
	cr_expect_eq(t->dtype, CEP_DTYPE_FLOAT32);
	cr_expect_eq(t->rank, 4);
	cr_expect_eq(t->dims[0], -1);
	cr_expect_str_eq(t->dim_params[0], "batch");
	cr_expect_eq(t->dims[1], 3);
	cr_expect_eq(t->dims[2], 224);
	cr_expect_eq(t->dims[3], 224);
	cr_expect_str_eq(t->dim_params[1], "");

	t = cep_session_input(s, 1);
	cr_expect_str_eq(t->name, "mask");
	cr_expect_eq(t->dtype, CEP_DTYPE_INT64);
	cr_expect_eq(t->rank, 3);
	cr_expect_eq(t->dims[0], 1);
	cr_expect_eq(t->dims[1], -1);
	cr_expect_str_eq(t->dim_params[1], "seq");
	cr_expect_eq(t->dims[2], -1);
	cr_expect_str_eq(t->dim_params[2], "");

	for (int i = 0; i < N_EXTRA; i++) {
		char want[16];

		snprintf(want, sizeof(want), "extra%d", i);
		t = cep_session_input(s, 2 + i);
		cr_assert_not_null(t);
		cr_expect_str_eq(t->name, want);
		cr_expect_eq(t->dtype, CEP_DTYPE_UINT8);
		cr_expect_eq(t->rank, 0);
	}
	cr_expect_null(cep_session_input(s, 2 + N_EXTRA));
	cr_expect_null(cep_session_input(s, -1));

	t = cep_session_output(s, 0);
	cr_expect_str_eq(t->name, "y");
	cr_expect_eq(t->rank, 2);
	cr_expect_eq(t->dims[0], -1);
	cr_expect_str_eq(t->dim_params[0], "batch");
	cr_expect_eq(t->dims[1], 1000);
	cr_expect_null(cep_session_output(s, 1));

	cr_expect_eq(cep_session_free(s), 0, "%s", cep_last_error());
	cr_expect_eq(seen.unloaded, 42);
	teardown(c);
}

Test(client_session, default_name_is_the_file_name)
{
	cep_client *c = setup();
	cep_session *s = load_ok(c);

	cr_expect_str_eq(seen.options.name, "model.onnx");
	cr_expect_eq(seen.options.precision, cudaep_v1_Precision_PRECISION_FP32);
	cep_session_free(s);
	teardown(c);
}

Test(client_session, load_fd_without_directory)
{
	cep_client *c = setup();
	cep_session *s = NULL;
	int fd = open(model_path, O_RDONLY | O_CLOEXEC);

	cr_assert_geq(fd, 0);
	cr_assert_eq(cep_session_load_fd(c, fd, -1, NULL, &s), 0, "%s",
		     cep_last_error());
	cr_expect_eq(seen.nfds, 1);
	cr_expect_not(seen.has_dir_fd);
	cr_expect_str_eq(seen.options.name, "model.onnx");
	cr_expect_str_eq(seen.model_bytes, "onnx-bytes");
	/* The caller's fd stays open and the caller's. */
	cr_expect_eq(fcntl(fd, F_GETFD) >= 0, 1);
	cep_session_free(s);
	close(fd);
	cr_expect_eq(cep_session_load_fd(c, -1, -1, NULL, &s), CEP_EBADF);
	teardown(c);
}

Test(client_session, refused_load_returns_daemon_error)
{
	cep_client *c = setup();
	cep_session *s = (cep_session *)&fake;
	int fds_before = fake_count_fds();

	seen.load_code = CEP_EUNSUPPORTED;
	cr_expect_eq(cep_session_load(c, model_path, NULL, &s), CEP_EUNSUPPORTED);
	cr_expect_null(s);
	cr_expect_str_eq(cep_last_error(),
			 "node 'Conv_0': op Conv opset 22 is not supported");
	cr_expect_eq(fake_count_fds(), fds_before, "an fd leaked");
	teardown(c);
}

Test(client_session, reply_without_session_is_protocol_error)
{
	cep_client *c = setup();
	cep_session *s = NULL;

	seen.omit_info = true;
	cr_expect_eq(cep_session_load(c, model_path, NULL, &s), CEP_EPROTO);
	cr_expect_null(s);
	teardown(c);
}

Test(client_session, bad_load_arguments_send_nothing)
{
	cep_client *c = setup();
	cep_session_options opts = {0};
	cep_session *s = NULL;
	char missing[160], name[80];

	snprintf(missing, sizeof(missing), "%s/nothing.onnx", model_dir);
	cr_expect_eq(cep_session_load(c, missing, NULL, &s), CEP_ENOENT);
	cr_expect_not_null(strstr(cep_last_error(), missing), "%s",
			   cep_last_error());
	cr_expect_eq(cep_session_load(c, model_dir, NULL, &s), CEP_EINVAL);
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	opts.name = name;
	cr_expect_eq(cep_session_load(c, model_path, &opts, &s),
		     CEP_ENAMETOOLONG);
	opts.name = NULL;
	opts.precision = (cep_precision)7;
	cr_expect_eq(cep_session_load(c, model_path, &opts, &s), CEP_EINVAL);
	cr_expect_eq(cep_session_load(c, NULL, NULL, &s), CEP_EINVAL);
	cr_expect_null(s);
	cr_expect_eq(fake.requests, 1, "only the hello reached the daemon");
	teardown(c);
}

Test(client_session, close_releases_leftover_sessions)
{
	cep_client *c = setup();

	load_ok(c);
	load_ok(c);
	/* Nothing to observe but the absence of leaks (ASan) and crashes. */
	teardown(c);
}

/* ----------------------------------------------------------------- run */

struct run_fixture {
	cep_client *c;
	cep_session *s;
	cep_region *r;
	cep_tensor in;
	cep_tensor out;
};

static void run_setup(struct run_fixture *f)
{
	f->c = setup();
	f->s = load_ok(f->c);
	cr_assert_eq(cep_region_new(f->c, 65536, &f->r), 0, "%s",
		     cep_last_error());
	f->in = (cep_tensor){.name = "x", .region = f->r, .offset = 64,
			     .bytes = 2 * 3 * 4 * 4, .dtype = CEP_DTYPE_FLOAT32,
			     .rank = 3, .shape = {2, 3, 4}};
	f->out = (cep_tensor){.name = "y", .region = f->r, .offset = 4096,
			      .bytes = 16384, .dtype = CEP_DTYPE_UNDEFINED};
}

static void run_teardown(struct run_fixture *f)
{
	cep_region_free(f->r);
	cep_session_free(f->s);
	teardown(f->c);
}

/* Runs with f's tensors and expects code and a message naming tensor. */
static void expect_refused(struct run_fixture *f, int code, const char *tensor)
{
	int rc = cep_run(f->s, &f->in, 1, &f->out, 1);

	cr_expect_eq(rc, code, "%s instead of %s: %s", cep_err_name(rc),
		     cep_err_name(code), cep_last_error());
	cr_expect_not_null(strstr(cep_last_error(), tensor),
			   "message does not name %s: %s", tensor,
			   cep_last_error());
}

Test(client_session, run_refuses_what_it_cannot_encode)
{
	struct run_fixture f;
	cep_client *other = NULL;
	cep_region *foreign = NULL;
	char name[CEP_MAX_TENSOR_NAME + 8];

	run_setup(&f);
	f.in.rank = CEP_MAX_RANK + 1;
	expect_refused(&f, CEP_ESHAPE, "input 'x'");
	f.in.rank = -1;
	expect_refused(&f, CEP_ESHAPE, "input 'x'");
	f.in.rank = 3;

	f.out.rank = -1;
	expect_refused(&f, CEP_ESHAPE, "output 'y'");
	f.out.rank = 0;

	f.in.region = NULL;
	expect_refused(&f, CEP_EINVAL, "input 'x'");
	cr_assert_eq(cep_connect(fake.path, "other", &other), 0);
	cr_assert_eq(cep_region_new(other, 4096, &foreign), 0);
	f.in.region = foreign;
	expect_refused(&f, CEP_EINVAL, "input 'x'");
	f.in.region = f.r;

	f.in.name = NULL;
	expect_refused(&f, CEP_EINVAL, "input #0");
	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	f.in.name = name;
	expect_refused(&f, CEP_EINVAL, "input 'xxx");
	f.in.name = "x";

	cr_expect_eq(cep_run(f.s, &f.in, CEP_MAX_IO + 1, &f.out, 1), CEP_ELIMIT);
	cr_expect_eq(cep_run(f.s, NULL, 1, &f.out, 1), CEP_EINVAL);
	cr_expect_eq(cep_run(NULL, &f.in, 1, &f.out, 1), CEP_EINVAL);
	cr_expect_eq(seen.runs, 0, "a bad run reached the daemon");

	cep_region_free(foreign);
	cep_close(other);
	run_teardown(&f);
}

/* What a tensor means goes to the daemon unjudged: this fake judges
 * nothing and runs it (the real daemon's refusals: test_client_run.c). */
Test(client_session, run_leaves_what_a_tensor_means_to_the_daemon)
{
	struct run_fixture f;

	run_setup(&f);
	f.in.bytes += 4;
	cr_expect_eq(cep_run(f.s, &f.in, 1, &f.out, 1), 0, "%s", cep_last_error());
	f.in.bytes -= 4;
	f.in.dtype = (cep_dtype)8;
	cr_expect_eq(cep_run(f.s, &f.in, 1, &f.out, 1), 0, "%s", cep_last_error());
	f.in.dtype = CEP_DTYPE_FLOAT32;
	f.in.offset = 65536 - 8;
	cr_expect_eq(cep_run(f.s, &f.in, 1, &f.out, 1), 0, "%s", cep_last_error());
	f.in.offset = 64;
	f.out.dtype = (cep_dtype)99;
	cr_expect_eq(cep_run(f.s, &f.in, 1, &f.out, 1), 0, "%s", cep_last_error());
	f.out.dtype = CEP_DTYPE_UNDEFINED;
	f.out.rank = 2;
	f.out.shape[1] = -1;
	cr_expect_eq(cep_run(f.s, &f.in, 1, &f.out, 1), 0, "%s", cep_last_error());
	f.out.rank = 0;
	f.out.shape[1] = 0;
	cr_expect_eq(seen.runs, 5);
	cr_expect_eq(seen.run.outputs[0].shape[1], -1);
	run_teardown(&f);
}

Test(client_session, run_sends_tensors_and_fills_outputs)
{
	struct run_fixture f;
	cep_tensor outs[2];
	const cudaep_v1_TensorRef *ref;

	run_setup(&f);
	outs[0] = f.out;
	outs[1] = f.out;
	outs[1].name = "z";
	outs[1].offset = 4096 + 16384;
	cr_assert_eq(cep_run(f.s, &f.in, 1, outs, 2), 0, "%s", cep_last_error());
	cr_assert_eq(seen.runs, 1);

	cr_expect_eq(seen.run.session_id, 42);
	cr_assert_eq(seen.run.inputs_count, 1);
	ref = &seen.run.inputs[0];
	cr_expect_str_eq(ref->name, "x");
	/* The fake numbered the region 100 + its request count: hello, load,
	 * register. */
	cr_expect_eq(ref->region_id, 103);
	cr_expect_eq(ref->offset, 64);
	cr_expect_eq(ref->bytes, 96);
	cr_expect_eq(ref->dtype, cudaep_v1_DataType_DT_FLOAT);
	cr_assert_eq(ref->shape_count, 3);
	cr_expect_eq(ref->shape[0], 2);
	cr_expect_eq(ref->shape[1], 3);
	cr_expect_eq(ref->shape[2], 4);
	cr_assert_eq(seen.run.outputs_count, 2);
	cr_expect_str_eq(seen.run.outputs[1].name, "z");
	cr_expect_eq(seen.run.outputs[1].offset, 4096 + 16384);
	cr_expect_eq(seen.run.outputs[1].bytes, 16384);

	/* The fake answered in reverse order with shape [2, 1000 + i]. */
	cr_expect_eq(outs[0].dtype, CEP_DTYPE_FLOAT32);
	cr_expect_eq(outs[0].rank, 2);
	cr_expect_eq(outs[0].shape[0], 2);
	cr_expect_eq(outs[0].shape[1], 1000);
	cr_expect_eq(outs[0].bytes, 8000);
	cr_expect_eq(outs[1].shape[1], 1001);
	cr_expect_eq(outs[1].bytes, 8008);
	cr_expect_str_eq(outs[1].name, "z");
	cr_expect_eq(outs[1].offset, 4096 + 16384);

	/* A run without outputs is fine too. */
	cr_expect_eq(cep_run(f.s, &f.in, 1, NULL, 0), 0, "%s", cep_last_error());
	run_teardown(&f);
}

Test(client_session, bad_run_reply_leaves_outputs_alone)
{
	struct run_fixture f;
	cep_tensor outs[2];

	run_setup(&f);
	outs[0] = f.out;
	outs[1] = f.out;
	outs[1].name = "z";
	seen.run_mode = 1; /* the reply lacks one output */
	cr_expect_eq(cep_run(f.s, &f.in, 1, outs, 2), CEP_EPROTO);
	cr_expect_not_null(strstr(cep_last_error(), "output"), "%s",
			   cep_last_error());
	cr_expect_eq(outs[0].rank, 0);
	cr_expect_eq(outs[0].bytes, 16384);
	cr_expect_eq(outs[1].rank, 0);

	seen.run_mode = 2; /* claims more bytes than the room given */
	cr_expect_eq(cep_run(f.s, &f.in, 1, outs, 2), CEP_EPROTO);
	cr_expect_eq(outs[0].bytes, 16384);
	cr_expect_eq(outs[0].dtype, CEP_DTYPE_UNDEFINED);
	run_teardown(&f);
}
