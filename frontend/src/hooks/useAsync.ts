import { useCallback, useEffect, useState, type DependencyList } from "react";

export interface Async<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
  /** Replaces the loaded value locally, e.g. after a live event or a write that returned it. */
  setData: (update: (previous: T | undefined) => T | undefined) => void;
}

/** Runs `load` when `deps` change (or on reload) and keeps its latest result. */
export function useAsync<T>(load: () => Promise<T>, deps: DependencyList): Async<T> {
  const [data, setDataState] = useState<T>();
  const [error, setError] = useState<unknown>();
  const [loading, setLoading] = useState(true);
  const [generation, setGeneration] = useState(0);

  useEffect(() => {
    let current = true;
    setLoading(true);
    load()
      .then((value) => {
        if (!current) return;
        setDataState(value);
        setError(undefined);
      })
      .catch((e: unknown) => current && setError(e))
      .finally(() => current && setLoading(false));
    return () => {
      current = false;
    };
    // `load` is a fresh closure each render; `deps` says when it means something new.
  }, [...deps, generation]);

  const reload = useCallback(() => setGeneration((g) => g + 1), []);
  const setData = useCallback(
    (update: (previous: T | undefined) => T | undefined) => setDataState(update),
    [],
  );
  return { data, error, loading, reload, setData };
}
