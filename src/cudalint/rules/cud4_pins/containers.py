"""CUD403: containers built on CUDA: Dockerfile `FROM`, compose GPU settings, and CUDA images
named in scripts (`docker run nvcr.io/...`, `srun --container-image=...`)."""

from __future__ import annotations

from collections.abc import Iterator

from yaml.nodes import Node

from cudalint.engine.contract import FileRule, Invalid, Valid
from cudalint.finding import Finding
from cudalint.formats import dockerfile, scripts, yaml_lines
from cudalint.formats.shell import Command, Word, basename, expand, program
from cudalint.kinds import FileKind, SourceFile
from cudalint.rules.cud4_pins.cuda_pins import cuda_image

# Commands that take an image: its name is one of their words, or an option's value.
_CONTAINER_TOOLS = frozenset({"docker", "podman", "nerdctl", "buildah", "singularity",
                              "apptainer", "enroot", "srun", "sbatch", "salloc", "kubectl"})
_IMAGE_OPTIONS = ("--container-image=", "--image=", "--from=")
_IMAGE_MESSAGE = ("`{}` is a CUDA image: it needs an NVIDIA GPU and the NVIDIA container "
                  "runtime; base the image on `python:3.x-slim` (or a CPU PyTorch image) for "
                  "other machines")


def image_words(command: Command) -> Iterator[tuple[Word, str]]:
    """(word, image) for each CUDA image a container command names."""
    argv = program(command)
    if not argv or basename(argv[0]) not in _CONTAINER_TOOLS:
        return
    for word in argv[1:]:
        value = word.value
        for prefix in _IMAGE_OPTIONS:
            if value.startswith(prefix):
                value = value[len(prefix) :]
        if value.startswith("-"):
            continue
        if cuda_image(value):
            yield word, value


class CudaContainer(FileRule):
    """
    ## What it does
    Finds containers built on CUDA:
    - Dockerfiles: `FROM nvidia/cuda...`, `FROM nvcr.io/nvidia/...`,
      `FROM pytorch/pytorch:*-cuda*` and other images tagged `cuda`/`cu121`/`gpu`, in every
      stage, past `--platform` flags, and through `ARG` defaults (`ARG BASE=nvidia/cuda:12.1`,
      `FROM ${BASE}`). A Dockerfile is found by any common name: `Dockerfile`,
      `Dockerfile.*`, `Dockerfile-*`, `Dockerfile_*` and `*.Dockerfile`.
    - Compose files: `runtime: nvidia`, `gpus:`, device reservations with `driver: nvidia` or
      `capabilities: [gpu]`, and CUDA images.
    - The same images in commands (`docker run`, `docker pull`, `singularity pull
      docker://...`, `srun --container-image=...`) of scripts, Makefiles and notebooks.

    ## Why is this bad?
    Docker on a Mac runs Linux containers without a GPU: a CUDA image has nothing to run on,
    and compose refuses `runtime: nvidia` and NVIDIA device requests. Severity: error.

    ## Example
    ```dockerfile
    FROM nvidia/cuda:12.1.0-cudnn8-devel-ubuntu22.04
    ```

    ## Use instead
    ```dockerfile
    ARG BASE=python:3.11-slim
    FROM ${BASE}
    ```
    building with `--build-arg BASE=nvidia/cuda:...` on the GPU servers. In a Dockerfile a
    suppression comment goes on the line above the instruction (`# noqa: CUD403`), since
    Docker reads `#` only at the start of a line.
    """

    code = "CUD403"
    name = "cuda-container"
    message = "container built on CUDA"
    file_kinds = frozenset({FileKind.DOCKERFILE, FileKind.COMPOSE, *scripts.SCRIPT_RULE_KINDS})
    VALID = (
        Valid("FROM python:3.11-slim\nRUN echo 'nvidia/cuda is not needed'\n",
              path="Dockerfile"),
        Valid("FROM python:3.11 AS build\nFROM build\n", path="Dockerfile"),
        Valid("services:\n  app:\n    image: python:3.11\n    runtime: runc\n",
              path="docker-compose.yml"),
        Valid("echo 'docker run nvcr.io/nvidia/pytorch:24.01-py3'\n", path="run.sh"),
        Valid("# noqa: CUD403\nFROM nvidia/cuda:12.1.0-runtime-ubuntu22.04\n",
              path="Dockerfile"),
        Valid("FROM arm64v8/python:3.11-slim\nRUN echo 'no nvidia/cuda base here'\n",
              path="Dockerfile-arm64"),
    )
    INVALID = (
        Invalid("FROM --platform=linux/amd64 nvidia/cuda:12.1.0-devel-ubuntu22.04 AS build\n"
                "FROM pytorch/pytorch:2.1.0-cuda12.1-cudnn8-runtime\n", path="Dockerfile",
                count=2),
        Invalid("ARG BASE=nvcr.io/nvidia/pytorch:24.01-py3\nFROM ${BASE}\n",
                path="docker/train.Dockerfile"),
        Invalid("services:\n  train:\n    image: app\n    runtime: nvidia\n    deploy:\n"
                "      resources:\n        reservations:\n          devices:\n"
                "            - driver: nvidia\n              count: 1\n"
                "              capabilities: [gpu]\n", path="docker-compose.yml", count=2),
        Invalid("docker run --rm nvcr.io/nvidia/pytorch:24.01-py3 python train.py\n",
                path="scripts/run.sh"),
        Invalid("srun --container-image=nvcr.io#nvidia/pytorch:23.10-py3 python train.py\n",
                path="train.slurm"),
        # Dockerfiles by any common name: Dockerfile-*, Dockerfile_*, *.dockerfile
        Invalid("FROM nvidia/cuda:12.1.0-devel-ubuntu22.04\nRUN pip install torch\n",
                path="docker/Dockerfile-gpu"),
        Invalid("FROM nvcr.io/nvidia/pytorch:24.01-py3\n", path="Dockerfile_cuda"),
        Invalid("FROM pytorch/pytorch:2.1.0-cuda12.1-cudnn8-runtime\n", path="gpu.dockerfile"),
    )

    def check(self, source: SourceFile) -> Iterator[Finding]:
        if source.kind is FileKind.COMPOSE:
            yield from self._compose(source)
            return
        if source.kind is FileKind.DOCKERFILE:
            yield from self._from_lines(source)
        for command in scripts.commands(source):
            for word, image in image_words(command):
                row, column = command.position(word)
                yield self.finding(source, row, column, message=_IMAGE_MESSAGE.format(image),
                                   guarded=command.guarded)

    def _from_lines(self, source: SourceFile) -> Iterator[Finding]:
        for instruction, arguments in dockerfile.with_variables(source.text or ""):
            if instruction.keyword != "FROM":
                continue
            words = [(w, where) for w, where in instruction.words()
                     if not w.value.startswith("--")]
            if not words:
                continue
            word, (row, column) = words[0]
            image = expand(word.value, arguments)
            if cuda_image(image):
                yield self.finding(source, row, column, message=_IMAGE_MESSAGE.format(image))

    def _compose(self, source: SourceFile) -> Iterator[Finding]:
        services = yaml_lines.compose_services(source)
        if isinstance(services, Finding):
            yield services
            return
        for service in services:
            yield from self._service(source, service)

    def _service(self, source: SourceFile, service: Node) -> Iterator[Finding]:
        image = yaml_lines.get(service, "image")
        if cuda_image(yaml_lines.scalar(image) or ""):
            yield self._at(source, image, _IMAGE_MESSAGE.format(yaml_lines.scalar(image)))
        runtime = yaml_lines.get(service, "runtime")
        if (yaml_lines.scalar(runtime) or "").lower() == "nvidia":
            yield self._at(source, runtime, "`runtime: nvidia` needs the NVIDIA container "
                           "runtime; compose on a Mac refuses it")
        gpus = yaml_lines.get(service, "gpus")
        if gpus is not None:
            yield self._at(source, gpus, "`gpus:` requests NVIDIA GPUs; compose on a Mac "
                           "has none to give")
        resources = yaml_lines.get(yaml_lines.get(service, "deploy"), "resources")
        devices = yaml_lines.get(yaml_lines.get(resources, "reservations"), "devices")
        for device in yaml_lines.entries(devices):
            driver = (yaml_lines.scalar(yaml_lines.get(device, "driver")) or "").lower()
            capabilities = [(yaml_lines.scalar(c) or "").lower() for c in
                            yaml_lines.entries(yaml_lines.get(device, "capabilities"))]
            if driver == "nvidia" or "gpu" in capabilities:
                yield self._at(source, device, "reserves an NVIDIA GPU device; compose on a "
                               "Mac cannot start the service")

    def _at(self, source: SourceFile, node: Node, message: str) -> Finding:
        return self.finding(source, *yaml_lines.value_start(node), message=message)
