"""What every test shares: configs are parsed as the exporter parses them, with the areas of
the registry (importing it hands their settings sections to config: ``declare_areas``); the
fake-upstream rig's fixtures (tests/rig/); the tests moved to the full suite (``FULL_SUITE``)."""

import pytest

import exporter.runtime.registry  # noqa: F401

pytest_plugins = ("tests.rig.fixtures",)

# Tests that `make test-fast` leaves to `make test`: each costs seconds of CPU (property tests
# of many examples, simulated runs, whole collections), found with `pytest --durations` over
# the fast lane (docs/dev/testing.md, *The fast lane*). They get the ``slow`` marker, as the
# tests marked where they are written; `make test` runs them all. An id names a test with
# every parameter, or one parameter (``name[param]``).
FULL_SUITE = (
    "tests/bench/test_request_cost.py::test_the_estimate_is_what_the_daemon_sends",
    "tests/bench/test_requests_measure.py::test_a_tight_budget_postpones_polls_but_never_traffic",
    "tests/bench/test_requests_measure.py::"
    "test_history_reads_only_changed_resources_and_a_share_of_the_rest",
    "tests/bench/test_timings.py::test_every_timing_prints_one_figure",
    "tests/config/test_loader_fuzz.py::test_any_config_shaped_document_gives_settings_or_config_error",
    "tests/config/test_loader_fuzz.py::test_any_document_gives_settings_or_config_error",
    "tests/docgen/test_generate.py::test_check_runs_as_a_module_from_anywhere",
    "tests/golden/test_openmetrics.py::test_both_formats_over_http",
    "tests/runtime/test_presence_restart_accounts.py::"
    "test_an_account_left_out_of_the_list_at_a_restart_resumes_when_a_reload_adds_it",
    "tests/runtime/test_presence_restart_accounts.py::"
    "test_minutes_away_beyond_catch_up_are_counted_as_missed_never_silent",
    "tests/simulation/test_simulation.py::test_fast_seed_holds_the_invariant[2000]",
    "tests/simulation/test_simulation.py::test_fast_seed_holds_the_invariant[2001]",
    "tests/simulation/test_simulation.py::test_same_seed_same_run_byte_for_byte",
    "tests/simulation/test_simulation.py::test_another_seed_is_another_run",
    "tests/structure/test_fast_lane.py::test_the_fast_lane_leaves_out_real_tools_daemons_and_slow_tests",
    "tests/structure/test_fast_lane.py::test_the_fast_lane_runs_a_handful_of_simulation_seeds",
    "tests/structure/test_fast_lane.py::"
    "test_the_fast_lane_runs_on_every_core_and_what_it_moves_exists",
    "tests/structure/test_code_text.py::test_no_comment_or_docstring_carries_a_measurement_or_history",
    "tests/structure/test_code_text.py::test_every_link_from_code_to_the_docs_names_a_heading",
    "tests/support/test_jsonpieces.py::test_loads_is_json_loads",
    "tests/support/test_jsonpieces.py::test_dumps_is_json_dumps",
    "tests/support/test_jsonpieces.py::test_broken_text_fails_or_decodes_as_json_loads_does",
    "tests/traffic/test_new_resource.py::test_a_resource_added_while_running_is_first_scraped_at_0[1]",
    "tests/traffic/test_new_resource.py::test_a_resource_added_while_running_is_first_scraped_at_0[2]",
    "tests/traffic/test_new_resource.py::test_a_resource_added_while_running_is_first_scraped_at_0[3]",
    "tests/traffic/test_first_exposure.py::"
    "test_the_lateness_counters_a_reload_includes_count_only_what_follows",
    "tests/traffic/test_folded_cost.py::test_folded_settle_reads_cost_what_the_docs_say",
    "tests/traffic/test_property.py::test_counters_end_at_the_final_truth_of_every_minute_read",
    "tests/traffic/test_slow.py::"
    "test_a_settle_read_that_keeps_failing_does_not_hold_back_the_runs_behind_it",
    "tests/traffic/test_worker.py::test_accounts_polled_at_once_with_a_state_file_count_exactly",
    "tests/traffic/test_settle_ages.py::"
    "test_a_read_set_aside_on_a_doubted_clock_holds_back_no_other_run",
    "tests/traffic/test_settle_pieces.py::"
    "test_a_run_read_in_pieces_under_a_budget_or_a_limit_is_settled",
    "tests/upstream/test_models.py::test_any_json_parses_or_is_invalid_body",
    "tests/upstream/test_models.py::test_error_helpers_accept_any_json",
    "tests/web/admin/test_contract.py::"
    "test_a_parameter_is_accepted_by_the_schema_exactly_when_the_check_accepts_it",
    "tests/web/admin/test_contract.py::test_schema_valid_requests_break_no_rule_but_the_listed_ones",
    "tests/web/admin/test_masking.py::test_no_secret_of_a_nested_body_survives_masking",
    "tests/web/admin/test_masking_url_property.py::test_no_planted_secret_survives_in_any_output",
    "tests/web/admin/test_openapi.py::test_fuzzed_requests_never_get_a_5xx_and_match_the_document",
    "tests/web/test_webauth_gate.py::"
    "test_a_cached_password_answers_while_hundreds_of_guesses_are_in_flight",
)


def in_full_suite_only(nodeid: str) -> bool:
    """Whether ``FULL_SUITE`` names the test ``nodeid`` (or its parameter)."""
    return any(nodeid == name or nodeid.startswith(f"{name}[") for name in FULL_SUITE)


@pytest.hookimpl(tryfirst=True)  # before ``-m`` selects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if in_full_suite_only(item.nodeid):
            item.add_marker(pytest.mark.slow)
