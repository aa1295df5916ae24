pytest_plugins = ["edaqa_pipeline_tests.conftest_llm", "edaqa_pipeline_tests.fixtures_index"]
