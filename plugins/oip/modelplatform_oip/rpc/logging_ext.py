"""Triton's logging extension on gRPC: ``LogSettings`` reads and changes the same live
settings as ``/v2/logging`` (a request with no settings only reads them); a change
applies on every ``--workers`` sibling before the answer (ServerContext.broadcast)."""

from __future__ import annotations

from typing import Any

from modelplatform import LOG_SETTINGS_TOPIC, Broadcast, log_settings, update_log_settings

from ..protos import grpc_service_pb2 as pb


class LogSettingsRpc:
    def __init__(self, broadcast: Broadcast) -> None:
        self.broadcast = broadcast

    async def answer(self, request: pb.LogSettingsRequest, context: Any) -> pb.LogSettingsResponse:
        if request.settings:
            # A value with no parameter set is None: the core refuses it with the field's type.
            changes = {name: _value(value) for name, value in request.settings.items()}
            update_log_settings(changes)
            await self.broadcast.publish(LOG_SETTINGS_TOPIC, changes)
        response = pb.LogSettingsResponse()
        for name, value in log_settings().items():
            _set(response.settings[name], value)
        return response


def _value(setting: pb.LogSettingsRequest.SettingValue) -> Any:
    choice = setting.WhichOneof("parameter_choice")
    return None if choice is None else getattr(setting, choice)


def _set(setting: pb.LogSettingsResponse.SettingValue, value: Any) -> None:
    # bool before int: a bool is an int in Python.
    if isinstance(value, bool):
        setting.bool_param = value
    elif isinstance(value, int):
        setting.uint32_param = value
    else:
        setting.string_param = value
