// Ledgerline overview: metric cards and the recent invoices, from the reporting API.
const api = document.querySelector('meta[name="api-base"]').content;
const app = document.getElementById("app");

const money = (cents, currency) =>
  new Intl.NumberFormat("en-US", { style: "currency", currency, maximumFractionDigits: 0 }).format(
    cents / 100,
  );
const h = (tag, attrs = {}, children = []) => {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  for (const child of [].concat(children)) node.append(child);
  return node;
};

function card(metric, currency) {
  const value =
    metric.unit === "money"
      ? money(metric.value, currency)
      : `${metric.value}${metric.unit === "days" ? " days" : ""}`;
  const direction = metric.change >= 0 ? "up" : "down";
  return h("section", { class: "card" }, [
    h("h3", {}, metric.label),
    h("p", { class: "value" }, value),
    h("p", { class: `delta ${metric.good === direction ? "up" : "down"}` }, [
      `${metric.change >= 0 ? "+" : "−"}${Math.abs(metric.change)}% ${metric.comparedTo}`,
    ]),
  ]);
}

function invoices(rows, currency) {
  return h("table", {}, [
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        ["Invoice", "Customer", "Amount", "Status", "Due"].map((c) => h("th", {}, c)),
      ),
    ),
    h(
      "tbody",
      {},
      rows.map((row) =>
        h("tr", {}, [
          h("td", {}, row.number),
          h("td", {}, row.customer),
          h("td", {}, money(row.amount, currency)),
          h("td", {}, h("span", { class: `badge ${row.status.toLowerCase()}` }, row.status)),
          h("td", {}, row.due),
        ]),
      ),
    ),
  ]);
}

async function main() {
  const res = await fetch(`${api}/v1/dashboard?range=30d`, { credentials: "omit" });
  const data = await res.json();
  app.replaceChildren(
    h("h1", {}, data.title),
    h("p", { class: "subtitle" }, data.subtitle),
    h(
      "div",
      { class: "cards" },
      data.metrics.map((m) => card(m, data.currency)),
    ),
    h("h2", {}, "Needs attention"),
    h(
      "ul",
      {},
      data.alerts.map((a) => h("li", {}, a)),
    ),
    h("h2", {}, "Recent invoices"),
    invoices(data.invoices, data.currency),
    h("p", { class: "footnote" }, data.footnote),
  );
}

main().catch((error) => {
  app.replaceChildren(
    h("p", { class: "error" }, `Could not load the overview (${error.message}).`),
  );
});
