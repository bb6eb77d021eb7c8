# A stand-in for the `openai` package, for bench evaluation-end-to-end only
# (never shipped; Debian packages no `openai`): the one call OpenEvolve
# makes, client.chat.completions.create, as one blocking HTTP request to
# the project's test server, whose reply is read as the real client would.
import json
import urllib.request


class _Object:
    def __init__(self, **fields):
        self.__dict__.update(fields)


class _Completions:
    def __init__(self, client):
        self._client = client

    def create(self, **params):
        body = json.dumps({k: v for k, v in params.items() if v is not None}).encode()
        request = urllib.request.Request(
            self._client.base_url.rstrip("/") + "/chat/completions",
            data=body,
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self._client.api_key}"},
        )
        with urllib.request.urlopen(request, timeout=self._client.timeout) as response:
            reply = json.load(response)
        choices = [
            _Object(index=c.get("index", 0), message=_Object(**c["message"]), finish_reason=c.get("finish_reason"))
            for c in reply["choices"]
        ]
        usage = _Object(**reply["usage"]) if reply.get("usage") else None
        return _Object(id=reply.get("id"), model=reply.get("model"), choices=choices, usage=usage)


class OpenAI:
    def __init__(self, api_key=None, base_url=None, timeout=None, max_retries=0, **_):
        self.api_key = api_key or "none"
        self.base_url = base_url
        self.timeout = timeout or 600
        self.chat = _Object(completions=_Completions(self))


AzureOpenAI = OpenAI
