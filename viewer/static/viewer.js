// Optional: the pages work without it. Applies a filter as soon as it is chosen.
document.addEventListener("change", (event) => {
  const select = event.target;
  if (select instanceof HTMLSelectElement && select.form && select.form.classList.contains("filters")) {
    select.form.submit();
  }
});
