# Sourced by the bench/gpu_*.sh device runs: install the checkout, find nvdisasm (the
# tuning model reads SASS), bring llm.c's sources (../shared does not travel: .llmc does),
# and start $LOG with the machine, driver, compiler and commit.
export PYTHONUNBUFFERED=1
pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || export PYTHONPATH=$PWD
if ! command -v nvdisasm >/dev/null; then
  for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do [ -x "$d/nvdisasm" ] && export PATH="$PATH:$d" && break; done
fi
if [ -d .llmc ]; then
  mkdir -p ../shared/realcode/llm.c/dev/cuda && cp .llmc/* ../shared/realcode/llm.c/dev/cuda/
fi
LOG=$OUT/gpu-log.txt
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; nvcc --version | tail -1
  echo "nvdisasm: $(command -v nvdisasm || echo none)"; echo "commit: ${COMMIT:-unknown}"; } > "$LOG"
