# alloxd, the allox scheduler extender. Debian packages only.
#   docker build -t allox/alloxd:0.1.0 .
FROM debian:12 AS build
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      cmake g++ make liblemon-dev libglpk-dev libboost-graph-dev libboost-dev libcpprest-dev libyaml-cpp-dev \
      nlohmann-json3-dev rapidjson-dev libcli11-dev libsqlite3-dev libspdlog-dev googletest libgtest-dev \
      libgmock-dev libbenchmark-dev libssl-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release && cmake --build /build -j 2 --target alloxd allox

# Every library alloxd and allox link (ELF NEEDED): scripts/check-image-libs.sh, run by ctest
# (cli.image_runtime_libs) and CI, fails when one is missing here.
FROM debian:12-slim
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      liblemon1.3.1 libglpk40 libcpprest2.10 libyaml-cpp0.7 libsqlite3-0 libssl3 libspdlog1.10 \
      libfmt9 ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home /var/lib/allox allox \
    && mkdir -p /var/lib/allox && chown allox /var/lib/allox
COPY --from=build /build/cli/alloxd /build/cli/allox /usr/local/bin/
COPY data/ /usr/share/allox/data/
# Numeric, so that a pod's runAsNonRoot can verify it.
USER 10001:10001
EXPOSE 8888 9090
ENTRYPOINT ["/usr/local/bin/alloxd"]
CMD ["--config", "/etc/allox/alloxd/alloxd.yaml"]
