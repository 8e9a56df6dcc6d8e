// Kestrel docs client: fetches the page's content from the docs API and renders it into #root.
(() => {
  const root = document.getElementById("root");
  const api = document.querySelector('meta[name="api-base"]').content;
  const slug = location.pathname.split("/").filter(Boolean).pop() || "retries";

  const el = (tag, props, ...children) => {
    const node = document.createElement(tag);
    Object.assign(node, props || {});
    for (const child of children) node.append(child);
    return node;
  };

  for (let i = 0; i < 6; i++) root.append(el("div", { className: "skeleton" }));

  const block = (b) => {
    switch (b.type) {
      case "heading":
        return el(`h${b.level}`, { id: b.text.toLowerCase().replace(/[^a-z0-9]+/g, "-") }, b.text);
      case "paragraph":
        return el("p", { innerHTML: b.html });
      case "code":
        return el("pre", {}, el("code", { className: `language-${b.lang}` }, b.code));
      case "table": {
        const head = el("thead", {}, el("tr", {}, ...b.columns.map((c) => el("th", {}, c))));
        const body = el(
          "tbody",
          {},
          ...b.rows.map((row) => el("tr", {}, ...row.map((cell) => el("td", { innerHTML: cell })))),
        );
        return el("table", {}, head, body);
      }
      case "note":
        return el("aside", { className: "callout" }, el("p", { innerHTML: b.html }));
      default:
        return document.createComment(`unknown block ${b.type}`);
    }
  };

  fetch(`${api}/v1/docs?slug=${encodeURIComponent(slug)}`, {
    headers: { accept: "application/json" },
  })
    .then((res) => {
      if (!res.ok) throw new Error(`docs API answered ${res.status}`);
      return res.json();
    })
    .then((page) => {
      document.title = `${page.title} · Kestrel docs`;
      const article = el("article", { className: "doc" }, el("h1", {}, page.title));
      for (const b of page.blocks) article.append(block(b));
      article.append(el("p", { className: "updated" }, `Last updated ${page.updated}`));
      root.replaceChildren(article);
    })
    .catch((error) => {
      root.replaceChildren(
        el("p", { className: "error" }, `Could not load this page: ${error.message}`),
      );
    });
})();
