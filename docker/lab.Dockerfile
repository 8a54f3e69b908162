# JupyterLab with the course, Java 17, Spark and every jar the lab needs, prefetched.
#
# Built by `docker compose up` (context: the repository root). Multi-arch: the base
# image and Debian's OpenJDK exist for amd64 and arm64, and the Kafka and Spark jars are
# pure Java, so Apple Silicon builds a native image (no emulation, no "exec format").
#   BASE           any Debian bookworm image with Python 3.11 and venv (default
#                  python:3.11-slim-bookworm; compose: DELIVERYLAB_LAB_BASE)
#   PIP_INDEX_URL  a PyPI mirror, for classrooms behind one
ARG BASE=python:3.11-slim-bookworm
FROM ${BASE}

# Java for the brokers and Spark; Maven to resolve the broker's jars (the Ivy fallback
# misses some of Kafka's runtime dependencies); make for the README's commands.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      openjdk-17-jre-headless maven make procps \
 && rm -rf /var/lib/apt/lists/*

# uid 1000: the usual first user on Linux, so the mounted labs/ folder is writable. The
# course folder is made here, owned by lab: WORKDIR alone would create it root-owned and
# Spark, started from it, could not write its scratch files.
RUN useradd --create-home --uid 1000 lab \
 && mkdir -p /home/lab/course && chown lab:lab /home/lab/course
USER lab
WORKDIR /home/lab/course
ENV VIRTUAL_ENV=/home/lab/venv PATH=/home/lab/venv/bin:$PATH \
    DELIVERYLAB_CACHE=/home/lab/.cache/deliverylab PYTHONUNBUFFERED=1

# Dependencies first (a layer that survives edits to the chapters), then the course.
COPY --chown=lab pyproject.toml README.md ./
COPY --chown=lab lib ./lib
ARG PIP_INDEX_URL=
RUN if [ -z "$PIP_INDEX_URL" ]; then unset PIP_INDEX_URL; fi \
 && python3 -m venv "$VIRTUAL_ENV" \
 && pip install --no-cache-dir -e . \
 && python -m deliverylab.setup
COPY --chown=lab labs ./labs

EXPOSE 8888
# Listen on every interface *inside* the container; compose publishes it on the host's
# 127.0.0.1 only. The token stays on: `docker compose up` prints the link to open.
CMD ["jupyter", "lab", "--ip=0.0.0.0", "--port=8888", "--no-browser", \
     "--notebook-dir=/home/lab/course/labs"]
