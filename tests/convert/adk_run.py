"""A real Google ADK run, offline: the quickstart's weather agent and the agent-team
tutorial's greeting sub-agent, driven by a scripted model instead of Gemini.

Origin: google/adk-docs, docs/get-started/quickstart.md (``multi_tool_agent``: a
``get_weather(city)`` tool that answers New York with ``{"status": "success",
"report": ...}`` and any other city with ``{"status": "error", "error_message": ...}``)
and docs/tutorials/agent-team.md (a ``greeting_agent`` sub-agent with ``say_hello(name)``,
reached by ADK's own ``transfer_to_agent`` call). The tools are written here after those
descriptions; ADK's ``InMemoryRunner`` runs them and records the session's events.

Run as a script to write the session's dumps to ``fixtures/adk/`` (the dict-form tests
read those, so they run without google-adk installed).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures" / "adk"
INSTRUCTION = "You are a helpful weather assistant. Use get_weather for weather questions."


def get_weather(city: str) -> dict[str, str]:
    """The weather report of a city (only New York is known)."""
    if city.lower() == "new york":
        return {"status": "success", "report": "Sunny in New York, 25 degrees Celsius."}
    return {"status": "error", "error_message": f"No weather information for '{city}'."}


def say_hello(name: str) -> str:
    """A greeting for ``name``."""
    return f"Hello, {name}!"


USAGE = [
    # the usage Gemini reports with the root agent's three replies, in its own fields
    # (promptTokenCount includes cachedContentTokenCount; thoughtsTokenCount is not in
    # candidatesTokenCount; toolUsePromptTokenCount is input apart from the prompt's)
    {
        "prompt_token_count": 1150,
        "cached_content_token_count": 1024,
        "candidates_token_count": 40,
        "thoughts_token_count": 120,
        "total_token_count": 1310,
    },
    {
        "prompt_token_count": 1290,
        "tool_use_prompt_token_count": 60,
        "candidates_token_count": 18,
        "total_token_count": 1368,
    },
    {"prompt_token_count": 1330, "candidates_token_count": 9, "total_token_count": 1339},
]
MODEL_VERSION = "gemini-2.5-flash"


def _scripted(name: str, replies: list[Any], usage: list[Any] | None = None) -> Any:
    """A BaseLlm that answers each request with the next scripted Content (and, where
    given, the usage Gemini would report with it)."""
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types
    from pydantic import Field

    class Scripted(BaseLlm):
        replies: list[Any] = Field(default_factory=list)
        usage: list[Any] = Field(default_factory=list)

        async def generate_content_async(
            self, llm_request: Any, stream: bool = False
        ) -> AsyncGenerator[LlmResponse, None]:
            if not self.usage:
                yield LlmResponse(content=self.replies.pop(0))
                return
            used = types.GenerateContentResponseUsageMetadata(**self.usage.pop(0))
            yield LlmResponse(
                content=self.replies.pop(0), usage_metadata=used, model_version=MODEL_VERSION
            )

    return Scripted(model=name, replies=replies, usage=list(usage or []))


def _call(tool: str, **args: Any) -> Any:
    from google.genai import types

    return types.Part(function_call=types.FunctionCall(name=tool, args=args))


def run() -> tuple[Any, list[Any]]:
    """Run the two-agent team over two user turns; the final session and the
    LlmRequests the root agent's model was sent (the system instruction is in them)."""
    from google.adk.agents import LlmAgent
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    def model(text: str) -> Any:
        return types.Content(role="model", parts=[types.Part(text=text)])

    root_replies = [
        types.Content(
            role="model",
            parts=[_call("get_weather", city="New York"), _call("get_weather", city="Paris")],
        ),
        model("New York is sunny at 25 degrees; I have no report for Paris."),
        types.Content(role="model", parts=[_call("transfer_to_agent", agent_name="greeter")]),
    ]
    greeter_replies = [
        types.Content(role="model", parts=[_call("say_hello", name="Alice")]),
        model("Hello, Alice!"),
    ]
    requests: list[Any] = []

    def keep_request(callback_context: Any, llm_request: Any) -> None:
        requests.append(llm_request.model_copy(deep=True))

    greeter = LlmAgent(
        name="greeter",
        model=_scripted("scripted-greeter", greeter_replies),
        instruction="Greet the user by name with say_hello.",
        tools=[say_hello],
    )
    root = LlmAgent(
        name="weather_agent",
        model=_scripted("scripted-weather", root_replies, USAGE),
        instruction=INSTRUCTION,
        tools=[get_weather],
        sub_agents=[greeter],
        before_model_callback=keep_request,
    )
    runner = InMemoryRunner(agent=root, app_name="weather_app")
    turns = ["What is the weather in New York and in Paris?", "Hi, I'm Alice."]

    async def go() -> Any:
        service = runner.session_service
        session = await service.create_session(app_name="weather_app", user_id="u1")
        for text in turns:
            message = types.Content(role="user", parts=[types.Part(text=text)])
            async for _ in runner.run_async(
                user_id="u1", session_id=session.id, new_message=message
            ):
                pass
        return await service.get_session(
            app_name="weather_app", user_id="u1", session_id=session.id
        )

    return asyncio.run(go()), requests


def run_refused() -> Any:
    """One agent whose model calls ``get_weather`` without its ``city``: ADK's
    FunctionTool refuses the call (``{"error": ...}``) and the model answers."""
    from google.adk.agents import LlmAgent
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    replies = [
        types.Content(role="model", parts=[_call("get_weather")]),
        types.Content(role="model", parts=[types.Part(text="Which city?")]),
    ]
    agent = LlmAgent(
        name="weather_agent",
        model=_scripted("scripted-weather", replies),
        instruction=INSTRUCTION,
        tools=[get_weather],
    )
    runner = InMemoryRunner(agent=agent, app_name="weather_app")

    async def go() -> Any:
        service = runner.session_service
        session = await service.create_session(app_name="weather_app", user_id="u1")
        message = types.Content(role="user", parts=[types.Part(text="What is the weather?")])
        async for _ in runner.run_async(user_id="u1", session_id=session.id, new_message=message):
            pass
        return await service.get_session(
            app_name="weather_app", user_id="u1", session_id=session.id
        )

    return asyncio.run(go())


def main() -> None:
    session, requests = run()
    FIXTURES.mkdir(parents=True, exist_ok=True)
    dumps = {
        "session.json": session.model_dump(mode="json"),
        "session_api.json": session.model_dump(mode="json", by_alias=True, exclude_none=True),
        "request.json": requests[0].model_dump(mode="json", exclude_none=True),
        "refused.json": run_refused().model_dump(mode="json"),
    }
    for name, data in dumps.items():
        (FIXTURES / name).write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()
