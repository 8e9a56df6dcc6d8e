// Harbor & Pine storefront: the product page is drawn from the catalogue API.
(() => {
  var mount = document.getElementById("__nuxt");
  var api = document.querySelector('meta[name="api-base"]').content;
  var sku = new URLSearchParams(location.search).get("sku") || "HP-KT-1704";

  function esc(text) {
    return String(text).replace(
      /[&<>"]/g,
      (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c],
    );
  }
  function money(pence, currency) {
    return new Intl.NumberFormat("en-GB", { style: "currency", currency: currency }).format(
      pence / 100,
    );
  }
  function stars(n) {
    return "★★★★★".slice(0, n) + "☆☆☆☆☆".slice(0, 5 - n);
  }

  function review(r) {
    return `<article class="review">
      <p class="stars" aria-label="${r.rating} out of 5 stars">${stars(r.rating)}</p>
      <h3>${esc(r.title)}</h3>
      <p class="byline">${esc(r.author)}, ${esc(r.date)}${r.verified ? " · Verified purchase" : ""}</p>
      <p>${esc(r.body)}</p>
    </article>`;
  }

  function view(p) {
    var image = p.images[0];
    var was = p.was ? `<span class="was">${money(p.was, p.currency)}</span>` : "";
    return `<section class="product">
      <div class="gallery"><img src="${esc(image.src)}" alt="${esc(image.alt)}"></div>
      <div class="details">
        <h1>${esc(p.title)}</h1>
        <p class="price">${money(p.price, p.currency)}${was}</p>
        <p class="rating">${p.rating.toFixed(1)} out of 5 (${p.reviewCount} reviews)</p>
        <p class="stock">${esc(p.stock)}</p>
        <button type="button" class="add">Add to basket</button>
      </div>
    </section>
    <section class="description"><h2>Description</h2>
      ${p.description.map((d) => `<p>${esc(d)}</p>`).join("")}
    </section>
    <section class="specs"><h2>Specifications</h2>
      <ul>${p.specs.map((s) => `<li><strong>${esc(s.name)}:</strong> ${esc(s.value)}</li>`).join("")}</ul>
    </section>
    <section class="reviews"><h2>Customer reviews</h2>${p.reviews.map(review).join("")}</section>`;
  }

  var xhr = new XMLHttpRequest();
  xhr.open("GET", `${api}/v1/store?sku=${encodeURIComponent(sku)}`);
  xhr.setRequestHeader("accept", "application/json");
  xhr.onload = () => {
    if (xhr.status !== 200) {
      mount.innerHTML = "<p>Sorry, this product could not be loaded.</p>";
      return;
    }
    var product = JSON.parse(xhr.responseText);
    document.title = `${product.title} | Harbor & Pine`;
    mount.innerHTML = view(product);
  };
  xhr.onerror = () => {
    mount.innerHTML = "<p>Sorry, this product could not be loaded.</p>";
  };
  xhr.send();
})();
