import os
import tempfile
from pathlib import Path

# ONNX query exports of the test run go to a temporary cache, not the user's ~/.cache
os.environ.setdefault("EDAQA_ONNX_CACHE", str(Path(tempfile.gettempdir()) / "edaqa-test-onnx"))

pytest_plugins = ["edaqa_pipeline_tests.conftest_llm", "edaqa_pipeline_tests.fixtures_index"]
