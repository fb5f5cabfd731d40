// Bar charts of usage, drawn by uPlot (loaded with the pages that plot, not with the app).
import uPlot from 'uplot';

export interface ChartInput {
  /** Days (YYYY-MM-DD, a time axis) or category labels. */
  readonly kind: 'days' | 'categories';
  readonly labels: readonly string[];
  readonly values: readonly number[];
  readonly seriesLabel: string;
  /** Counts (requests, tokens): the axis steps by whole numbers. */
  readonly whole: boolean;
  /** How a value reads on the axis and in the legend. */
  format(value: number): string;
}

const ACCENT = '#1d4ed8';
const AXIS = { stroke: '#545b66', grid: { stroke: '#e6e8ec' }, ticks: { stroke: '#d9dde3' } };

const WHOLE_STEPS = [
  1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
];

const shorten = (label: string): string => (label.length > 22 ? `${label.slice(0, 21)}…` : label);

export function drawChart(target: HTMLElement, input: ChartInput, width: number): uPlot {
  const days = input.kind === 'days';
  const x = days
    ? input.labels.map((day) => Date.parse(`${day}T00:00:00Z`) / 1000)
    : input.labels.map((_, index) => index);
  const half = days ? 43_200 : 0.5;
  // Away from the bars, the legend reads the latest day (or the first, largest group), not
  // dashes; hovering a bar shows that bar's.
  const restingIndex = days ? input.labels.length - 1 : 0;
  const shown = (index: number | null): number => index ?? restingIndex;
  const options: uPlot.Options = {
    width,
    height: 280,
    tzDate: (seconds) => uPlot.tzDate(new Date(seconds * 1000), 'Etc/UTC'),
    cursor: { drag: { x: false, y: false }, points: { show: false } },
    legend: { live: true },
    scales: {
      x: {
        time: days,
        // from the bars themselves: with one bar, uPlot's own min and max of a lone value are
        // not that value (a range it pads to 100 for categories, a day more for days), and
        // the bar was drawn squeezed against the axis
        range: (_u, min, max) =>
          x.length === 0 ? [min - half, max + half] : [x[0]! - half, x[x.length - 1]! + half],
      },
      y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] },
    },
    axes: [
      days
        ? { ...AXIS }
        : {
            ...AXIS,
            splits: () => x,
            values: (_u, splits) => splits.map((index) => shorten(input.labels[index] ?? '')),
            rotate: input.labels.length > 4 ? -25 : 0,
            size: input.labels.length > 4 ? 90 : 40,
            gap: 6,
          },
      {
        ...AXIS,
        ...(input.whole && { incrs: WHOLE_STEPS }),
        values: (_u, splits) => splits.map((value) => input.format(value)),
        // wide enough for its longest label
        size: (_u, values) =>
          Math.max(40, ...(values ?? []).map((value) => value.length * 7.5 + 18)),
      },
    ],
    series: [
      days
        ? {
            label: 'Day',
            value: (_u, _seconds, _series, index) => input.labels[shown(index)] ?? '–',
          }
        : {
            label: 'Group',
            value: (_u, _index, _series, index) => input.labels[shown(index)] ?? '–',
          },
      {
        label: input.seriesLabel,
        stroke: ACCENT,
        fill: 'rgba(29, 78, 216, 0.35)',
        width: 1,
        points: { show: false },
        paths: uPlot.paths.bars!({ size: [0.7, 48] }),
        value: (_u, _value, _series, index) => {
          const value = input.values[shown(index)];
          return value === undefined ? '–' : input.format(value);
        },
      },
    ],
  };
  // an empty day draws no bar (a zero would draw a flat line along the axis)
  const y = input.values.map((value) => (value === 0 ? null : value));
  return new uPlot(options, [x, y], target);
}
