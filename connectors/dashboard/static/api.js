// The API client: the token of this tab, requests with it, and the live stream.

const KEY = "jobstream-token";

export class Refused extends Error {}

export function token() {
  return sessionStorage.getItem(KEY);
}

export function setToken(value) {
  if (value) sessionStorage.setItem(KEY, value);
  else sessionStorage.removeItem(KEY);
}

function headers(extra = {}) {
  return { Authorization: `Bearer ${token()}`, ...extra };
}

async function answer(response) {
  if (response.status === 401) throw new Refused("the token was refused");
  const body = response.headers.get("content-type")?.includes("json") ? await response.json() : null;
  if (!response.ok) throw new Error(body?.detail ?? `HTTP ${response.status}`);
  return body;
}

export async function get(path, params = {}) {
  const query = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== "" && v != null));
  const url = query.toString() ? `${path}?${query}` : path;
  return answer(await fetch(url, { headers: headers() }));
}

// A body that is not JSON (a job's result): the response's bytes as a Blob, whose type is
// the response's content type.
export async function download(path) {
  const response = await fetch(path, { headers: headers() });
  if (!response.ok) await answer(response);  // throws with the API's detail
  return response.blob();
}

export async function post(path, body = undefined) {
  const init = { method: "POST", headers: headers({ "content-type": "application/json" }) };
  if (body !== undefined) init.body = JSON.stringify(body);
  return answer(await fetch(path, init));
}

export async function remove(path) {
  return answer(await fetch(path, { method: "DELETE", headers: headers() }));
}

// Follows /api/v1/stream (fetch, not EventSource: it sends the Authorization header) and
// calls onEvent(name, data) for each server-sent event; reconnects after a pause while
// keepGoing() holds. onState(true|false) tells whether the stream is connected.
export async function follow(onEvent, onState, keepGoing) {
  while (keepGoing()) {
    try {
      const response = await fetch("/api/v1/stream", { headers: headers() });
      if (response.status === 401) throw new Refused("the token was refused");
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      onState(true);
      while (keepGoing()) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let name = "message";
          const data = [];
          for (const line of block.split("\n")) {
            if (line.startsWith("event: ")) name = line.slice(7);
            else if (line.startsWith("data: ")) data.push(line.slice(6));
          }
          if (data.length) onEvent(name, JSON.parse(data.join("\n")));
        }
      }
      reader.cancel().catch(() => {});
    } catch (error) {
      if (error instanceof Refused) { onState(false); throw error; }
    }
    onState(false);
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
}
