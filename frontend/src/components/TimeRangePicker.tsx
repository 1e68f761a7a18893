import { useTimeRange } from "../hooks/useTimeRange";
import { RANGES } from "../lib/timeRange";

/** The global time range of every chart (in the URL as `?range=`). */
export function TimeRangePicker() {
  const [range, setRange] = useTimeRange();
  return (
    <div className="segmented" role="group" aria-label="Time range" data-testid="time-range">
      {RANGES.map((r) => (
        <button
          key={r.key}
          type="button"
          aria-pressed={r.key === range.key}
          onClick={() => setRange(r.key)}
          title={`Charts show the last ${r.label}`}
        >
          {r.label}
        </button>
      ))}
    </div>
  );
}
