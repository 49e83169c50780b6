// The front end of models.book.widgets.ChartsView: draws a panel's charts with vega-embed, and when a new run
// brings only new data (the same spec), swaps each chart's data in its existing view instead of
// compiling and drawing the chart again. Prefixed at load time by the vega-embed bundle, which sets
// window.vegaEmbed; nothing is fetched from the network.

export default {
  render({ model, el }) {
    el.classList.add("latch-charts-view");
    const shown = [];  // per chart: {div, view, key}: key is the drawn spec as JSON, to compare the next one with
    let drawing = Promise.resolve();

    async function draw() {
      const charts = model.get("charts");
      const version = model.get("version");
      while (shown.length > charts.length) {
        const gone = shown.pop();
        if (gone.view) gone.view.finalize();
        gone.div.remove();
      }
      for (let k = 0; k < charts.length; k++) {
        const { spec, datasets } = charts[k];
        const key = JSON.stringify(spec);
        let slot = shown[k];
        if (!slot) {
          slot = { div: document.createElement("div"), view: null, key: null };
          el.appendChild(slot.div);
          shown.push(slot);
        }
        if (slot.view && slot.key === key) {
          for (const [name, rows] of Object.entries(datasets)) slot.view.data(name, rows);
          await slot.view.runAsync();
          slot.div.dataset.update = "data";
        } else {
          if (slot.view) slot.view.finalize();
          const result = await window.vegaEmbed(slot.div, { ...spec, datasets }, { actions: false, renderer: "canvas" });
          slot.view = result.view;
          slot.key = key;
          slot.div.dataset.update = "embed";
        }
      }
      el.dataset.drawn = String(version);  // the update a reader now sees (the panel benchmark waits for it)
    }

    const redraw = () => { drawing = drawing.then(draw).catch(err => { el.textContent = "Chart error: " + err; }); };
    model.on("change:version", redraw);
    redraw();
    return () => shown.forEach(slot => slot.view && slot.view.finalize());
  },
};
