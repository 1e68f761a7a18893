import { useCallback, useEffect, useState } from "react";

import { api, ApiError } from "../api/client";

export interface Resource<T> {
  data: T | undefined;
  error: ApiError | undefined;
  loading: boolean;
  reload: () => void;
}

/** GETs `path` (JSON) and reloads on demand; `path === null` fetches nothing. */
export function useResource<T>(path: string | null): Resource<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<ApiError>();
  const [loading, setLoading] = useState(path !== null);
  const [generation, setGeneration] = useState(0);

  useEffect(() => {
    if (path === null) return;
    const controller = new AbortController();
    setLoading(true);
    api
      .request<T>(path, { signal: controller.signal })
      .then((value) => {
        setData(value);
        setError(undefined);
      })
      .catch((e: unknown) => {
        if (e instanceof ApiError) setError(e);
        else if (!controller.signal.aborted) setError(new ApiError(0, String(e)));
      })
      .finally(() => {
        if (!controller.signal.aborted) setLoading(false);
      });
    return () => controller.abort();
  }, [path, generation]);

  const reload = useCallback(() => setGeneration((g) => g + 1), []);
  return { data, error, loading, reload };
}
