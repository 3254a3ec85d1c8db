/*
 * listener.c — the daemon's listening socket (listener.h): binding it at
 * a path, after making the path free, or taking the one systemd passed.
 */
#include "daemon/listener.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "client/cudaep.h"
#include "common/error.h"
#include "common/log.h"
#include "daemon/config.h"

static int socket_addr(struct sockaddr_un *addr, const char *path)
{
	memset(addr, 0, sizeof(*addr));
	addr->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(addr->sun_path)) {
		log_err("socket path %s is too long", path);
		return CEP_ENAMETOOLONG;
	}
	strcpy(addr->sun_path, path);
	return 0;
}

/* Creates the socket's directory when it is missing (one level: its parent
 * is expected to exist, as /run and $XDG_RUNTIME_DIR do). */
static int socket_dir_make(const char *path, mode_t mode)
{
	char dir[CONFIG_PATH_MAX];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash == NULL || slash == dir)
		return 0;
	*slash = '\0';
	if (mkdir(dir, mode) == 0) {
		log_info("created %s", dir);
		return 0;
	}
	if (errno == EEXIST)
		return 0;
	log_err("cannot create the socket directory %s: %s", dir,
		strerror(errno));
	return cep__from_errno(errno);
}

/*
 * Makes path free for bind(): nothing there is fine; a socket nobody
 * answers on is a dead daemon's and is removed; a socket that answers
 * belongs to a live daemon and anything else is not ours to replace.
 */
static int socket_path_claim(const char *path)
{
	struct sockaddr_un addr;
	struct stat sb;
	int fd, ret, err;

	if (lstat(path, &sb) != 0) {
		if (errno == ENOENT)
			return 0;
		log_err("cannot inspect %s: %s", path, strerror(errno));
		return cep__from_errno(errno);
	}
	if (!S_ISSOCK(sb.st_mode)) {
		log_err("%s exists and is not a socket; refusing to replace "
			"it", path);
		return CEP_EEXIST;
	}
	ret = socket_addr(&addr, path);
	if (ret != 0)
		return ret;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		log_err("socket: %s", strerror(errno));
		return cep__from_errno(errno);
	}
	ret = connect(fd, (struct sockaddr *)&addr, sizeof(addr));
	err = errno;
	close(fd);
	if (ret == 0 || err == EAGAIN || err == EINPROGRESS) {
		/* EAGAIN: a full backlog, which only a live daemon has. */
		log_err("another cudaepd is already serving %s", path);
		return CEP_EBUSY;
	}
	if (err != ECONNREFUSED) {
		log_err("%s is in use (%s); refusing to replace it", path,
			strerror(err));
		return cep__from_errno(err);
	}
	if (unlink(path) != 0 && errno != ENOENT) {
		log_err("cannot remove the stale socket %s: %s", path,
			strerror(errno));
		return cep__from_errno(errno);
	}
	log_notice("removed the stale socket %s of a daemon that is gone",
		   path);
	return 0;
}

int listener_bind(const char *path, bool system_wide, mode_t mode, int64_t gid,
		  const char *group, int *fd_out)
{
	struct sockaddr_un addr;
	int fd = -1, ret;

	ret = socket_addr(&addr, path);
	if (ret != 0)
		return ret;
	ret = socket_dir_make(path, system_wide ? 0755 : 0700);
	if (ret != 0)
		return ret;
	ret = socket_path_claim(path);
	if (ret != 0)
		return ret;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ret = cep__from_errno(errno);
		log_err("socket: %s", strerror(errno));
		return ret;
	}
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
		ret = cep__from_errno(errno);
		log_err("cannot bind %s: %s", path, strerror(errno));
		close(fd);
		return ret;
	}
	*fd_out = fd;
	/* Permissions are set before listen(): until then nobody can
	 * connect, so there is no moment with the wrong ones. */
	if (chmod(path, mode) != 0) {
		ret = cep__from_errno(errno);
		log_err("cannot chmod %s to %04o: %s", path, (unsigned)mode, strerror(errno));
		return ret;
	}
	if (gid >= 0 && chown(path, (uid_t)-1, (gid_t)gid) != 0) {
		ret = cep__from_errno(errno);
		log_err("cannot give %s to group %s: %s", path, group, strerror(errno));
		return ret;
	}
	if (listen(fd, SOMAXCONN) != 0) {
		ret = cep__from_errno(errno);
		log_err("cannot listen on %s: %s", path, strerror(errno));
		return ret;
	}
	return 0;
}

int listener_activated(int *fd_out, char *path, size_t size)
{
	struct sockaddr_un addr;
	socklen_t len = sizeof(addr);
	int n, fd = SD_LISTEN_FDS_START, fl;

	n = sd_listen_fds(1);
	if (n < 0) {
		log_err("LISTEN_FDS: %s", strerror(-n));
		return n;
	}
	if (n == 0)
		return 0;
	if (n > 1) {
		log_err("systemd passed %d sockets; cudaepd takes one", n);
		return CEP_EINVAL;
	}
	if (sd_is_socket_unix(fd, SOCK_SEQPACKET, 1, NULL, 0) <= 0) {
		log_err("the socket systemd passed is not a listening "
			"SOCK_SEQPACKET Unix socket (check "
			"ListenSequentialPacket= in cudaepd.socket)");
		return CEP_EINVAL;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0 ||
	    fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
		log_err("cannot set up the socket systemd passed: %s",
			strerror(errno));
		return cep__from_errno(errno);
	}
	*fd_out = fd;
	if (getsockname(fd, (struct sockaddr *)&addr, &len) == 0 &&
	    len > offsetof(struct sockaddr_un, sun_path) &&
	    addr.sun_path[0] != '\0')
		snprintf(path, size, "%.*s", (int)sizeof(addr.sun_path), addr.sun_path);
	else
		snprintf(path, size, "(socket from systemd)");
	return 1;
}

