# JupyterLab with the course, Java 17, Spark, every jar the lab needs, and the docker CLI.
#
# Built by `docker compose up` (context: the repository root) or `docker/lab-image.sh`.
# Multi-arch: the base image and Debian's packages exist for amd64 and arm64, and the
# Kafka and Spark jars are pure Java, so Apple Silicon builds a native image.
#   BASE           any Debian bookworm image with Python 3.11 (default
#                  python:3.11-slim-bookworm; compose: DELIVERYLAB_LAB_BASE). The offline
#                  build uses deliverylab/debian:bookworm, which has every package
#                  below already (docker/lab-image.sh makes it by debootstrap).
#   PIP_INDEX_URL  a PyPI mirror, for classrooms behind one
# With no network, docker/lab-image.sh fills docker/lab-bundle/ (`make bundle`: wheels
# and jars) and pip installs from it; the folder is empty otherwise.
ARG BASE=python:3.11-slim-bookworm
FROM ${BASE} AS system
USER root
# Marks every stage's images, so that docker/lab-image.sh removes its own old ones.
LABEL deliverylab.image=lab

# Java for Spark (and the local backend); the docker CLI, so that a chapter starts its
# brokers as sibling containers through the mounted engine socket; Python's venv; make
# for the README's commands; ps. Only what the base lacks is installed (no apt-get at
# all on the offline base).
RUN missing=""; \
    command -v java >/dev/null || missing="$missing openjdk-17-jre-headless"; \
    command -v docker >/dev/null || missing="$missing docker.io"; \
    python3 -c 'import ensurepip, venv' 2>/dev/null || missing="$missing python3-venv"; \
    command -v make >/dev/null || missing="$missing make"; \
    command -v ps >/dev/null || missing="$missing procps"; \
    if [ -n "$missing" ]; then \
      apt-get update \
      && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing \
      && rm -rf /var/lib/apt/lists/*; \
    fi

# uid 1000: the usual first user on Linux, so the mounted labs/ folder is writable. The
# course folder is made here, owned by lab: WORKDIR alone would create it root-owned and
# Spark, started from it, could not write its scratch files.
RUN useradd --create-home --uid 1000 lab \
 && mkdir -p /home/lab/course && chown lab:lab /home/lab/course
WORKDIR /home/lab/course
ENV VIRTUAL_ENV=/home/lab/venv PATH=/home/lab/venv/bin:$PATH HOME=/home/lab \
    DELIVERYLAB_CACHE=/home/lab/.cache/deliverylab PYTHONUNBUFFERED=1

# The install (with the `singleuser` extra: jupyterhub-singleuser, which a hub's
# DockerSpawner runs in this image, `make classroom SPAWNER=docker`), in a stage of its own: the offline bundle (wheels and jars, ~750 MB) is
# copied into this stage only, and the final image takes just what the install made
# (a layer deleted later would still be shipped). No RUN --mount: the classic builder,
# which docker/lab-image.sh uses for engines without buildx, has none.
FROM system AS install
USER lab
COPY --chown=lab pyproject.toml README.md ./
COPY --chown=lab lib ./lib
COPY --chown=lab docker/lab-bundle /tmp/bundle
ARG PIP_INDEX_URL=
RUN if [ -z "$PIP_INDEX_URL" ]; then unset PIP_INDEX_URL; fi \
 && python3 -m venv "$VIRTUAL_ENV" \
 && if [ -f /tmp/bundle/manifest.json ]; then \
      export PIP_NO_INDEX=1 PIP_FIND_LINKS=/tmp/bundle/wheels \
      && pip install --no-cache-dir -e '.[singleuser]' \
      && python -m deliverylab.classroom.setup.bundle install /tmp/bundle; \
    else pip install --no-cache-dir -e '.[singleuser]'; fi \
 && python -m deliverylab.classroom.setup.install

# What the install made, all under /home/lab: the venv (same path: its scripts name
# it), the jars' cache and the course's files the editable install points to.
FROM system
COPY --from=install --chown=lab:lab /home/lab /home/lab
USER lab
COPY --chown=lab labs ./labs

# Starts as root only to join the group of the mounted engine socket (its gid differs
# between machines), then runs everything as lab.
USER root
COPY docker/lab-entry.sh /usr/local/bin/lab-entry.sh
ENTRYPOINT ["sh", "/usr/local/bin/lab-entry.sh"]
EXPOSE 8888
# Compose runs the container on the host's network (see compose.yml), so JupyterLab
# listens on the host's 127.0.0.1 only. The token stays on: the log prints the link.
CMD ["jupyter", "lab", "--ip=127.0.0.1", "--port=8888", "--no-browser", \
     "--notebook-dir=/home/lab/course/labs"]
