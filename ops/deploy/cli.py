"""``jobstream deploy ...``: the Kubernetes manifests of a profile, and the CRDs that
check them offline."""

from __future__ import annotations

from pathlib import Path

import typer

from jobstream._ops.deploy.profiles import PROFILES

deploy_app = typer.Typer(help="Kubernetes manifests of the whole stack (docs/deploy.md).",
                         no_args_is_help=True)  # fmt: skip


@deploy_app.command("render")
def render(
    profile: str = typer.Option("dev", "--profile",
                                help=f"One of: {', '.join(PROFILES)} (docs/deploy.md)."),
    image: str | None = typer.Option(None, "--image",
                                     help="The jobstream image (default: jobstream:<version>)."),
    out: Path | None = typer.Option(None, "--out", "-o",
                                    help="Write the YAML here instead of standard output."),
) -> None:  # fmt: skip
    """Print every manifest of a profile as one YAML stream: kubectl apply -f -"""
    from jobstream._ops.deploy.render import render_profile, to_yaml

    if profile not in PROFILES:
        raise typer.BadParameter(f"unknown profile {profile!r}; the profiles are "
                                 f"{', '.join(PROFILES)}", param_hint="--profile")  # fmt: skip
    text = to_yaml(render_profile(profile, image=image))
    if out is None:
        typer.echo(text, nl=False)
    else:
        out.write_text(text)


@deploy_app.command("crds")
def crds() -> None:
    """Fetch KEDA's CRDs (pinned version and hash) into the cache, once; print their folder."""
    from jobstream._ops.deploy.crds import fetch_crds

    typer.echo(str(fetch_crds()))
