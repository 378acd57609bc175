"""The webhooks' and the Slack command's request and response bodies."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, Field, StringConstraints, field_validator

from app.core.schemas import StrictModel, printable
from app.webhooks.addresses import MAX_URL

EventName = Literal["game", "void", "season", "challenge", "moment", "digest"]


class WebhookCreate(StrictModel):
    url: Annotated[str, StringConstraints(min_length=1, max_length=MAX_URL), AfterValidator(printable)] = Field(
        description="Where to POST the events: an https URL whose host resolves to public addresses only (a Slack or "
        "Microsoft Teams incoming-webhook URL works as it is). A server with `MELO_WEBHOOKS_ALLOW_PRIVATE=true` "
        "also takes http and loopback or private addresses."
    )
    events: list[EventName] = Field(
        min_length=1,
        max_length=6,
        description="The events to send: `game` (a game recorded), `void` (a game voided), `season` (a season "
        "closed, with its podium), `challenge`, `moment` (a first win, an upset, a streak, a new #1), `digest` "
        "(the ladder's week, once a week).",
    )

    model_config = StrictModel.model_config | {
        "json_schema_extra": {
            "examples": [{"url": "https://hooks.slack.com/services/T000/B000/XXXX", "events": ["game", "season"]}]
        }
    }

    @field_validator("events")
    @classmethod
    def _once_each(cls, events: list[str]) -> list[str]:
        if len(set(events)) < len(events):
            raise ValueError("name each event once")
        return events


class WebhookOut(BaseModel):
    id: int = Field(description="The webhook's id within the ladder (`…/webhooks/{id}`).")
    url: str = Field(description="Where its events are POSTed.")
    events: list[EventName] = Field(description="The events it is sent.")
    failing: bool = Field(
        description="Its latest delivery failed after every attempt (the delivery log says why); the next one that "
        "succeeds clears it."
    )
    created_at: datetime = Field(description="When it was made: it is sent the events after that.")


class WebhookCreated(WebhookOut):
    secret: str = Field(
        description="Signs every delivery (`Melo-Signature`). Shown only this once: keep it where the receiver "
        "checks signatures."
    )


class DeliveryOut(BaseModel):
    id: int = Field(description="The delivery's id.")
    event: EventName = Field(description="The event it carries.")
    event_id: int | None = Field(
        description="The ladder event it carries (the event stream's id; the body's `event_id`); null for a digest."
    )
    status: Literal["pending", "delivered", "failed"] = Field(
        description="`pending`: being attempted (the webhook's later events wait for it); `delivered`: a 2xx "
        "answer came; `failed`: every attempt failed."
    )
    attempts: int = Field(description="Attempts made so far.")
    response_code: int | None = Field(description="The HTTP status of the latest answer; null: none came.")
    error: str | None = Field(description="What went wrong at the latest attempt, if it failed.")
    created_at: datetime = Field(description="When the event was taken for delivery.")
    attempted_at: datetime | None = Field(description="When it was last attempted.")
    delivered_at: datetime | None = Field(description="When the receiver took it.")


class SlackSetup(StrictModel):
    signing_secret: Annotated[str, StringConstraints(min_length=8, max_length=200), AfterValidator(printable)] = Field(
        description="The Slack app's signing secret (Slack: your app, Basic Information, App Credentials). Never "
        "shown back."
    )

    model_config = StrictModel.model_config | {
        "json_schema_extra": {"examples": [{"signing_secret": "8f742231b10e8888abcd99yyyzzz85a5"}]}
    }


class SlackOut(BaseModel):
    configured: bool = Field(description="The ladder takes signed slash commands at `POST …/slack`.")
    updated_at: datetime | None = Field(description="When its signing secret was last set; null: none is.")


class SlackAnswer(BaseModel):
    response_type: Literal["ephemeral", "in_channel"] = Field(
        description="`in_channel`: Slack shows the answer to the channel; `ephemeral`: to the user who typed the "
        "command only (help, and what to fix: nothing was changed)."
    )
    text: str = Field(description="The answer, in words.")
