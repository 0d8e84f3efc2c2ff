// Triggers: the token's owner's event triggers (docs/triggers.md), each a source topic, a
// filter and the job a matching record starts. A form defines one (or replaces one of the
// same name), a button removes one; the trigger processors apply either within a second.

import { get, post, remove } from "./api.js";
import { fill, h, table } from "./dom.js";

const FORMATS = ["json", "avro", "raw"];

// The form's fields as POST /api/v1/triggers takes them; a JSON field that does not parse
// is named before anything is sent.
function definition(form) {
  const value = (name) => form.elements[name].value.trim();
  const json = (name) => {
    const text = value(name);
    if (!text) return {};
    try { return JSON.parse(text); } catch { throw new Error(`${name}: not JSON`); }
  };
  return {
    name: value("name"), source: value("source"), format: value("format"),
    filter: value("filter") || null, description: value("description"),
    job: { job_type: value("job_type"), params: json("params"), keys: json("keys"),
      pass_value: form.elements.pass_value.checked },
  };
}

export function render(root) {
  const message = h("p", { class: "message", id: "triggers-message", role: "status" });
  const field = (name, attrs = {}) => h("label", {}, `${name} `, h("input", { name, ...attrs }));
  const form = h("form", { id: "trigger-form", class: "trigger-form" },
    field("name", { required: true, placeholder: "orders-paid", size: 16 }),
    field("source", { required: true, placeholder: "orders", size: 16 }),
    h("label", {}, "format ", h("select", { name: "format" },
      ...FORMATS.map((f) => h("option", { value: f }, f)))),
    field("filter", { placeholder: "value.status == 'paid'", size: 28 }),
    field("job_type", { required: true, placeholder: "order.ship", size: 16 }),
    field("params", { placeholder: '{"order": "value.id"}', size: 24 }),
    field("keys", { placeholder: '{"concurrency": {"key": "{params.order}"}}', size: 28 }),
    h("label", {}, h("input", { name: "pass_value", type: "checkbox" }), " whole value as params"),
    field("description", { size: 20 }),
    h("button", { type: "submit" }, "Define"));

  const load = async () => {
    const items = await get("/api/v1/triggers");
    const rows = items.map((t) => h("tr", { "data-trigger": t.name },
      h("td", {}, t.name), h("td", { class: "mono" }, t.source), h("td", {}, t.format),
      h("td", { class: "mono" }, t.filter ?? "every record"),
      h("td", {}, t.job.job_type), h("td", { class: "mono" }, JSON.stringify(t.job.params)),
      h("td", { class: "mono" }, Object.keys(t.job.keys ?? {}).length ? JSON.stringify(t.job.keys) : ""),
      h("td", { class: "actions" }, h("button", { type: "button", class: "danger", "data-remove": t.name,
        onclick: async () => {
          try {
            await remove(`/api/v1/triggers/${encodeURIComponent(t.name)}`);
            message.textContent = `removed: ${t.name}`;
            load();
          } catch (error) { message.textContent = error.message; }
        } }, "Remove"))));
    fill(root, h("h1", {}, `Triggers (${items.length})`),
      items.length ? table([["name"], ["source"], ["format"], ["filter"], ["job type"], ["params"],
        ["keys"], [""]], rows, { id: "triggers" }) : h("p", { class: "message" }, "No trigger yet."),
      h("h2", {}, "Define a trigger"), form, message);
  };

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const defined = await post("/api/v1/triggers", definition(form));
      message.textContent = `defined: ${defined.name}`;
      form.reset();
      load();
    } catch (error) { message.textContent = error.message; }
  });
  load();
  return { onStatus() {}, stop() {} };
}
