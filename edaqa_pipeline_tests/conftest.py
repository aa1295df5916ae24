pytest_plugins = ["edaqa_pipeline_tests.conftest_llm"]
