/*
 * region.c — shared-memory regions of libcudaep-client: a memfd sealed so
 * its size can never change (the daemon maps it and must not fault on a
 * truncation), mapped here and registered with cudaepd, which pins it for
 * DMA. Tensors handed to cep_run() are slices of regions. Above the
 * transport (conn.c) only; cep_close() (client.c) drops the ones left.
 */
#include "client/client_priv.h"
#include "common/error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int sys_error(const char *what, size_t bytes)
{
	int err = errno;

	return cep__set_error(cep__from_errno(err),
			      "cannot %s for a region of %zu bytes: %s", what,
			      bytes, strerror(err));
}

int cep_region_new(cep_client *c, size_t bytes, cep_region **out)
{
	cudaep_v1_Request *req;
	cep_region *r = NULL;
	int fd = -1;
	int ret;

	if (c == NULL || out == NULL)
		return cep__set_error(CEP_EINVAL,
				      "cep_region_new: NULL argument");
	*out = NULL;
	if (bytes == 0)
		return cep__set_error(CEP_EINVAL, "a region of 0 bytes");
	if ((uint64_t)bytes > (uint64_t)INT64_MAX)
		return cep__set_error(CEP_EINVAL,
				      "a region of %zu bytes is too large",
				      bytes);

	r = calloc(1, sizeof(*r));
	if (r == NULL) {
		ret = cep__set_error(CEP_ENOMEM, "cannot allocate a region");
		goto out;
	}
	r->data = MAP_FAILED;
	fd = memfd_create("cudaep-region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		ret = sys_error("create a memfd", bytes);
		goto out;
	}
	if (ftruncate(fd, (off_t)bytes) != 0) {
		ret = sys_error("size the memfd", bytes);
		goto out;
	}
	/* F_SEAL_SEAL as well, so nobody can add a seal (F_SEAL_WRITE) that
	 * would stop the daemon writing outputs. */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) !=
	    0) {
		ret = sys_error("seal the memfd", bytes);
		goto out;
	}
	r->data = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r->data == MAP_FAILED) {
		ret = sys_error("map the memfd", bytes);
		goto out;
	}
	r->size = bytes;
	r->client = c;

	pthread_mutex_lock(&c->conn.lock);
	req = CEP__REQ(&c->conn, register_region);
	req->body.register_region.size = bytes;
	ret = cep__conn_call(&c->conn, req, &fd, 1, c->conn.resp,
			     cudaep_v1_Response_register_region_tag);
	if (ret == 0) {
		r->id = c->conn.resp->body.register_region.region_id;
		cep__link_add(&c->regions, &r->link);
	}
	pthread_mutex_unlock(&c->conn.lock);
	if (ret != 0)
		goto out;
	*out = r;
	r = NULL;
	ret = 0;
out:
	/* The daemon holds its own reference to the memfd once registered. */
	if (fd >= 0)
		close(fd);
	if (r != NULL) {
		if (r->data != MAP_FAILED)
			munmap(r->data, bytes);
		free(r);
	}
	return ret;
}

void cep__region_drop(struct cep_region *r)
{
	munmap(r->data, r->size);
	free(r);
}

int cep_region_free(cep_region *r)
{
	cep_client *c;
	cudaep_v1_Request *req;
	int ret;

	if (r == NULL)
		return 0;
	c = r->client;
	pthread_mutex_lock(&c->conn.lock);
	req = CEP__REQ(&c->conn, release_region);
	req->body.release_region.region_id = r->id;
	/* The reply body is empty: any body, or none, will do. */
	ret = cep__conn_call(&c->conn, req, NULL, 0, c->conn.resp, 0);
	cep__link_del(&r->link);
	pthread_mutex_unlock(&c->conn.lock);
	cep__region_drop(r);
	return ret;
}

void *cep_region_data(const cep_region *r)
{
	return r != NULL ? r->data : NULL;
}

size_t cep_region_size(const cep_region *r)
{
	return r != NULL ? r->size : 0;
}
