"""``assay calls``: production calls become tests. ``import`` turns a vendor's call export into a suite's call
set (failing calls that match no case become draft regression cases); ``review`` lists, accepts or deletes
the drafts. The work is :mod:`.calls_import` and :mod:`.calls_review`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

calls_app = typer.Typer(help="Production calls become tests: import a vendor's calls, review the drafts.",
                        no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(calls_app, name="calls")


@calls_app.command("import")
def calls_import(
    vendor: Annotated[str, typer.Argument(metavar="VENDOR", help="vapi, elevenlabs or hamming.")],
    file: Annotated[str, typer.Argument(metavar="FILE", help="The export: one object, a JSON list or JSON Lines of "
                                        "them. VAPI: calls (GET /call, GET /call/{id}) or end-of-call-report webhook "
                                        "bodies; ElevenLabs: conversations (GET /v1/convai/conversations/{id}) or "
                                        "post_call_transcription webhook bodies; Hamming: a test run's results (GET "
                                        "/test-runs/{id}/results) or single results.")],
    suite: Annotated[str, typer.Option(metavar="TEAM/SUITE", help="The suite whose cases the calls are matched to.")],
    out: Annotated[str, typer.Option(metavar="CALL_SET", help="The call set to add the matched calls to (JSON Lines; "
                                     "created if missing); drafts go beside it, CALL_SET's name + .drafts.yaml.")],
    match: Annotated[str, typer.Option(metavar="FIELD", help="The key in each call's metadata that holds its "
                                       "case key.")] = "assay_case",
    case: Annotated[str | None, typer.Option(metavar="KEY", help="Match every call to this case instead.")] = None,
    template: Annotated[str | None, typer.Option(metavar="KEY", help="Draft a regression case from this template for "
                                                 "each failing call that matches no case.")] = None,
    facts: Annotated[str | None, typer.Option(metavar="FILE", help="The team's facts for the template (YAML or JSON); "
                                              "values the vendor extracted from the call win.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one machine-readable JSON document.")] = False,
) -> None:
    """Import a vendor's call export into a call set: each call matched to a case of the suite; a failing call
    that matches none drafted as a regression case (with --template). Costs keep the vendor's own unit
    (ElevenLabs credits are never dollars). All or nothing; again: nothing new."""
    from .calls_import import import_calls

    from . import cli

    body = import_calls(cli._workspace().engine, vendor, file, suite, out, match=match, case=case,
                        template=template, facts=facts)
    if cli._emit("assay.calls.import", body, as_json):
        return
    console = cli._console()
    console.print(f"imported {vendor} export {file}", overflow="fold")
    console.print(f"  into {body['call_set']} ({body['suite']})", overflow="fold")
    console.print(f"  {len(body['matched'])} matched, {len(body['drafted'])} drafted, {len(body['skipped'])} skipped, "
                  f"{len(body['already_imported'])} already imported")
    for m in body["matched"]:
        console.print(f"matched {m['call_id']}", overflow="fold")
        said = {"pass": "passed", "fail": "failed", "error": "did not execute (replayed: an ERROR case run)",
                "unknown": "no verdict"}[m["verdict"]]
        console.print(f"  case {m['case']}; by the vendor: {said}", overflow="fold")
    for d in body["drafted"]:
        console.print(f"drafted {d['key']} from {d['call_id']}", overflow="fold")
        console.print(f"  why: {d['reason']}", overflow="fold")
    for sk in body["skipped"]:
        console.print(f"skipped {sk['call_id']}", overflow="fold")
        console.print(f"  why: {sk['reason']}", overflow="fold")
    if body["changed"]:
        console.print("the call set changed: load its bundle again before a run (`assay load BUNDLE`)")
    if body["drafted"]:
        console.print(f"review the drafts: assay calls review {body['call_set']}", overflow="fold")


@calls_app.command("review")
def calls_review(
    call_set: Annotated[str, typer.Argument(metavar="CALL_SET", help="The call set the drafts were imported for.")],
    accept: Annotated[str | None, typer.Option(metavar="KEY", help="Accept this draft: its case into --into, its "
                                               "call into CALL_SET.")] = None,
    into: Annotated[str | None, typer.Option(metavar="BUNDLE", help="With --accept: the YAML bundle that defines the "
                                             "draft's suite; the case is added to its team and suite.")] = None,
    delete: Annotated[str | None, typer.Option(metavar="KEY", help="Delete this draft (its call is not drafted "
                                               "again).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one machine-readable JSON document.")] = False,
) -> None:
    """List the draft regression cases of a call set; accept one into a bundle, or delete one. A draft counts
    only once accepted and the bundle loaded."""
    from assay.core.errors import UsageError

    from . import calls_review as review
    from . import cli

    path = Path(call_set)
    if accept and delete:
        raise UsageError("give --accept KEY or --delete KEY, not both")
    if accept and not into:
        raise UsageError("--accept needs --into BUNDLE: the bundle that defines the draft's suite")
    if into and not accept:
        raise UsageError("--into goes with --accept KEY")
    body = (review.accept(path, accept, Path(into)) if accept and into else review.delete(path, delete) if delete
            else review.listing(path))  # fmt: skip
    if cli._emit("assay.calls.review", body, as_json):
        return
    _print(cli._console(), body)


def _print(console: Any, body: dict[str, Any]) -> None:
    if body["action"] == "accepted":
        console.print(f"accepted {body['key']}: case {body['case']} added to {body['into']} (team and suite), its "
                      f"call to {body['call_set']}", overflow="fold")
        console.print(f"it counts once loaded: assay load {body['into']}", overflow="fold")
    elif body["action"] == "deleted":
        console.print(f"deleted {body['key']}: its call will not be drafted again", overflow="fold")
    if not body["drafts"]:
        console.print(f"no drafts for {body['suite']} in {body['drafts_file']}", overflow="fold")
        return
    console.print(f"{len(body['drafts'])} draft(s) for {body['suite']}", overflow="fold")
    console.print(f"  in {body['drafts_file']}", overflow="fold")
    for d in body["drafts"]:
        console.print(d["key"], overflow="fold")
        console.print(f"  from call {d['call_id']} (template {d['template']}, {d['turns']} caller turn(s))",
                      overflow="fold")
        console.print(f"  title: {d['title']}", overflow="fold")
        console.print(f"  why: {d['reason']}", overflow="fold")
