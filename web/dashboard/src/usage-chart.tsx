// A usage bar chart: uPlot is fetched with the first chart (a separate, hashed script), drawn
// at the width of its box and redrawn when that changes. The table next to every chart holds
// the same numbers as text.
import { useEffect, useRef, useState } from 'preact/hooks';
import type { ChartInput } from './chart.js';

export function UsageChart({ input, description }: { input: ChartInput; description: string }) {
  const box = useRef<HTMLDivElement>(null);
  const [failed, setFailed] = useState(false);
  const signature = JSON.stringify([
    input.kind,
    input.labels,
    input.values,
    input.seriesLabel,
    input.whole,
  ]);
  useEffect(() => {
    let cancelled = false;
    let chart: { destroy(): void; setSize(size: { width: number; height: number }): void } | null =
      null;
    let observer: ResizeObserver | null = null;
    import('./chart.js').then(
      ({ drawChart }) => {
        const element = box.current;
        if (cancelled || !element) return;
        chart = drawChart(element, input, element.clientWidth);
        let width = element.clientWidth;
        observer = new ResizeObserver(() => {
          if (element.clientWidth === width) return;
          width = element.clientWidth;
          chart?.setSize({ width, height: 280 });
        });
        observer.observe(element);
      },
      () => !cancelled && setFailed(true),
    );
    return () => {
      cancelled = true;
      observer?.disconnect();
      chart?.destroy();
    };
    // `signature` stands for `input` (a new object each render, the same numbers)
  }, [signature]);
  return (
    <figure class="chart">
      <div ref={box} class="chart-box" role="img" aria-label={description} />
      {failed && (
        <p class="error" role="alert">
          The chart could not be loaded; the table below has the same numbers.
        </p>
      )}
    </figure>
  );
}
