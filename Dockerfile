# podpath serve in a container, for hosts with a registry (docker compose up).
# Learner clusters run on the host's Docker engine through its socket; build
# the node image on the host first (bin/podpath nodeimage build) or set
# PODPATH_NODE_IMAGE to an image the host has.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -o /podpath .

FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends docker.io ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /podpath /usr/local/bin/podpath
ENV PODPATH_LISTEN=:8080 PODPATH_STATE_DIR=/var/lib/podpath
VOLUME /var/lib/podpath
EXPOSE 8080
ENTRYPOINT ["podpath"]
CMD ["serve"]
