# syntax=docker/dockerfile:1
#
# cdnvideo-exporter container image.
#
#   docker build -t cdnvideo-exporter .
#   docker run -p 9877:9877 -e CDNVIDEO_TOKEN=... cdnvideo-exporter
#
# Config: /etc/cdnvideo-exporter/config.yml (the default one below reads everything from
# CDNVIDEO_* variables and discovers the accounts; mount your own file over it).
# State:  /var/lib/cdnvideo-exporter (a volume; the rest of the filesystem may be read-only).
# See docs/deploy.md.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# ---- build: install the package and its dependencies into a self-contained venv ----------
FROM ${PYTHON_IMAGE} AS build

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH

# cdnvideo_exporter_build_info{revision, branch}: docker build
#   --build-arg CDNVIDEO_BUILD_REVISION="$(git rev-parse HEAD)"
#   --build-arg CDNVIDEO_BUILD_BRANCH="$(git rev-parse --abbrev-ref HEAD)"
# (setup.py stamps them; the build context has no .git)
ARG CDNVIDEO_BUILD_REVISION=unknown
ARG CDNVIDEO_BUILD_BRANCH=unknown

WORKDIR /src
# The dependencies first, exactly as locked (versions and hashes: requirements.lock, made by
# `make lock` from pyproject.toml); every one ships wheels for this platform, so no compiler
# is needed. Then the package itself, without resolving anything again.
COPY requirements.lock ./
RUN pip install --no-cache-dir --require-hashes --only-binary=:all: -r requirements.lock
COPY pyproject.toml setup.py README.md ./
COPY exporter ./exporter
RUN pip install --no-cache-dir --no-deps --no-binary=cdnvideo-exporter . \
    && pip check \
    && python -c "import exporter.cli"

# ---- runtime: the venv, a non-root user, nothing else -----------------------------------
FROM ${PYTHON_IMAGE}

ARG UID=10001
ARG GID=10001

LABEL org.opencontainers.image.title="cdnvideo-exporter" \
      org.opencontainers.image.description="Prometheus exporter and admin gateway for the CDNvideo streaming platform API" \
      org.opencontainers.image.licenses="Apache-2.0"

RUN groupadd --system --gid "${GID}" cdnvideo \
    && useradd --system --uid "${UID}" --gid cdnvideo --no-create-home \
       --home-dir /nonexistent --shell /usr/sbin/nologin cdnvideo \
    && install -d -m 0755 /etc/cdnvideo-exporter \
    && install -d -m 0750 -o cdnvideo -g cdnvideo /var/lib/cdnvideo-exporter

COPY --from=build /opt/venv /opt/venv
COPY deploy/docker/config.yml /etc/cdnvideo-exporter/config.yml

ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    CDNVIDEO_HEALTHCHECK_URL=http://127.0.0.1:9877/healthz

USER ${UID}:${GID}
WORKDIR /var/lib/cdnvideo-exporter
VOLUME ["/var/lib/cdnvideo-exporter"]
EXPOSE 9877

# The slim image has no curl; Python's urllib raises (exit 1) on anything but a 2xx answer.
# With TLS on (web config file) set CDNVIDEO_HEALTHCHECK_URL=https://...: the probe asks its
# own process on 127.0.0.1, so the certificate (issued for the service name) is not verified.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, ssl, urllib.request; urllib.request.urlopen(os.environ['CDNVIDEO_HEALTHCHECK_URL'], timeout=4, context=ssl._create_unverified_context())"]

ENTRYPOINT ["cdnvideo-exporter"]
CMD ["run", "--config.file", "/etc/cdnvideo-exporter/config.yml"]
