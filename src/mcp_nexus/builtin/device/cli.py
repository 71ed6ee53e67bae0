"""`nexus device` commands: run the device server standalone, or print what it detects."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from mcp_nexus.builtin.device.brightness.detect import BRIGHTNESS_BACKEND_CHOICES
from mcp_nexus.builtin.device.brightness.sysfs import DEFAULT_BACKLIGHT_ROOT
from mcp_nexus.builtin.device.commands import DEFAULT_TIMEOUT_SECONDS
from mcp_nexus.builtin.device.volume.amixer import DEFAULT_CONTROL
from mcp_nexus.builtin.device.volume.detect import AUDIO_BACKEND_CHOICES
from mcp_nexus.builtin.device.volume.pactl import DEFAULT_SINK

app = typer.Typer(help="The built-in device server.", no_args_is_help=True)

BacklightRoot = Annotated[str, typer.Option(help="Folder holding the backlight devices.")]
BacklightDevice = Annotated[
    str | None, typer.Option(help="Backlight device to use (default: the best one found).")
]
AudioBackend = Annotated[str, typer.Option(help=f"Volume backend: {', '.join(AUDIO_BACKEND_CHOICES)}.")]
BrightnessBackend = Annotated[
    str, typer.Option(help=f"Brightness backend: {', '.join(BRIGHTNESS_BACKEND_CHOICES)}.")
]
PulseServer = Annotated[
    str | None, typer.Option(help="PulseAudio server for pactl, e.g. unix:/run/user/1000/pulse/native.")
]
PulseSink = Annotated[str, typer.Option(help="PulseAudio sink whose volume is controlled.")]
AlsaDevice = Annotated[
    str | None, typer.Option(help="ALSA device for amixer -D (default: the default card).")
]
AlsaControl = Annotated[str, typer.Option(help="ALSA simple mixer control.")]
Timeout = Annotated[float, typer.Option(help="Seconds a helper program (pactl, amixer...) may take.")]


def _server_options(**options: Any) -> dict[str, Any]:
    return {key: value for key, value in options.items() if value is not None}


@app.command()
def serve(
    http: Annotated[bool, typer.Option("--http", help="Serve streamable HTTP instead of stdio.")] = False,
    host: Annotated[str, typer.Option(help="Address to listen on with --http.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on with --http.", min=1, max=65535)] = 8766,
    backlight_root: BacklightRoot = DEFAULT_BACKLIGHT_ROOT,
    backlight_device: BacklightDevice = None,
    audio_backend: AudioBackend = "auto",
    brightness_backend: BrightnessBackend = "auto",
    pulse_server: PulseServer = None,
    pulse_sink: PulseSink = DEFAULT_SINK,
    alsa_device: AlsaDevice = None,
    alsa_control: AlsaControl = DEFAULT_CONTROL,
    timeout: Timeout = DEFAULT_TIMEOUT_SECONDS,
) -> None:
    """Run the device server over stdio (default) or streamable HTTP at http://HOST:PORT/mcp."""
    from mcp_nexus.builtin.device.server import create_server

    try:
        server = create_server(
            **_server_options(
                backlight_root=backlight_root,
                backlight_device=backlight_device,
                audio_backend=audio_backend,
                brightness_backend=brightness_backend,
                pulse_server=pulse_server,
                pulse_sink=pulse_sink,
                alsa_device=alsa_device,
                alsa_control=alsa_control,
                command_timeout=timeout,
            )
        )
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    if http:
        server.run("streamable-http", host=host, port=port)
    else:
        server.run("stdio")


@app.command()
def info(
    as_json: Annotated[bool, typer.Option("--json", help="Print the structured result as JSON.")] = False,
    backlight_root: BacklightRoot = DEFAULT_BACKLIGHT_ROOT,
    backlight_device: BacklightDevice = None,
    audio_backend: AudioBackend = "auto",
    brightness_backend: BrightnessBackend = "auto",
    pulse_server: PulseServer = None,
    pulse_sink: PulseSink = DEFAULT_SINK,
    alsa_device: AlsaDevice = None,
    alsa_control: AlsaControl = DEFAULT_CONTROL,
    timeout: Timeout = DEFAULT_TIMEOUT_SECONDS,
) -> None:
    """Print what get_system_info would answer, including which backends were detected."""
    from mcp_nexus.builtin.device.backends import detect_backends
    from mcp_nexus.builtin.device.system_info import collect_system_info, describe_system_info

    try:
        backends = detect_backends(
            **_server_options(
                backlight_root=backlight_root,
                backlight_device=backlight_device,
                audio_backend=audio_backend,
                brightness_backend=brightness_backend,
                pulse_server=pulse_server,
                pulse_sink=pulse_sink,
                alsa_device=alsa_device,
                alsa_control=alsa_control,
                command_timeout=timeout,
            )
        )
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    system_info = collect_system_info(backends.names(), backends.missing)
    if as_json:
        typer.echo(json.dumps(system_info.model_dump(mode="json"), indent=2))
    else:
        typer.echo(describe_system_info(system_info))
